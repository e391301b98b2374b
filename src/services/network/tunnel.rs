//! A `CONNECT` tunnel between the command's socket and the host's. The command's first bytes
//! are read and looked at before anything reaches the host: a request for another proxy hop
//! closes the tunnel. After them, bytes move with `splice(2)` through a pipe, socket to
//! socket, without being copied through the proxy's memory.

use std::io;
use std::os::fd::AsFd;
use std::sync::Arc;

use rustix::pipe::{PipeFlags, SpliceFlags};
use tokio::io::Interest;
use tokio::net::TcpStream;

/// How far into a tunnel the proxy looks for a request line.
const PEEK_LIMIT: usize = 8 * 1024;

/// The pipe between the two sockets of each direction.
const PIPE_SIZE: usize = 1024 * 1024;

/// How a tunnel ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relayed {
    /// Both ways until each side was done (or failed).
    Done,
    /// Closed at once: the command's first bytes asked for another hop.
    AnotherHop,
}

/// Relays between `client` (which already sent `already`) and `upstream` until both are done;
/// `undecided` is let go once the first bytes were looked at.
pub(crate) async fn relay<T>(
    client: TcpStream,
    already: Vec<u8>,
    upstream: TcpStream,
    undecided: T,
) -> Relayed {
    let (client, upstream) = (Arc::new(client), Arc::new(upstream));
    let down = {
        let (from, to) = (Arc::clone(&upstream), Arc::clone(&client));
        tokio::spawn(async move {
            let _ = splice_all(&from, &to).await;
            let _ = rustix::net::shutdown(&*to, rustix::net::Shutdown::Write);
        })
    };
    let first = first_bytes(&client, already).await;
    drop(undecided);
    match first {
        Ok(first) if classify(&first) == Verdict::Hop => {
            down.abort();
            return Relayed::AnotherHop;
        }
        Ok(first) => {
            if write_all(&upstream, &first).await.is_ok() {
                let _ = splice_all(&client, &upstream).await;
            }
            let _ = rustix::net::shutdown(&*upstream, rustix::net::Shutdown::Write);
        }
        Err(_) => down.abort(),
    }
    let _ = down.await;
    Relayed::Done
}

/// Reads from the command (after what `first` already holds) until [`classify`] can tell
/// what its first bytes are.
async fn first_bytes(client: &TcpStream, mut first: Vec<u8>) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 16 * 1024];
    while first.is_empty() || classify(&first) == Verdict::Undecided {
        let n = client
            .async_io(Interest::READABLE, || {
                Ok(rustix::io::read(client, &mut buf)?)
            })
            .await?;
        if n == 0 {
            break;
        }
        first.extend_from_slice(&buf[..n]);
    }
    Ok(first)
}

async fn write_all(to: &TcpStream, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        let n = to
            .async_io(Interest::WRITABLE, || {
                Ok(rustix::net::send(
                    to,
                    bytes,
                    rustix::net::SendFlags::NOSIGNAL,
                )?)
            })
            .await?;
        bytes = &bytes[n..];
    }
    Ok(())
}

/// Moves everything `from` sends to `to`, through a pipe of its own, until `from` ends.
async fn splice_all(from: &TcpStream, to: &TcpStream) -> io::Result<()> {
    let (pipe_out, pipe_in) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
    let chunk = rustix::pipe::fcntl_setpipe_size(&pipe_in, PIPE_SIZE).unwrap_or(64 * 1024);
    loop {
        // The pipe is empty here, so only the socket can make this wait.
        let n = from
            .async_io(Interest::READABLE, || splice(from, &pipe_in, chunk))
            .await?;
        if n == 0 {
            return Ok(());
        }
        let mut left = n;
        while left > 0 {
            let moved = to
                .async_io(Interest::WRITABLE, || splice(&pipe_out, to, left))
                .await?;
            if moved == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            left -= moved;
        }
    }
}

fn splice(from: impl AsFd, to: impl AsFd, len: usize) -> io::Result<usize> {
    let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
    Ok(rustix::pipe::splice(from, None, to, None, len, flags)?)
}

/// What the first bytes through a tunnel are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Not enough yet.
    Undecided,
    /// A request to another proxy: `CONNECT`, or any method with an absolute URI.
    Hop,
    /// Anything else (TLS, an origin-form request, another protocol).
    Other,
}

/// Reads a request line as leniently as the most lenient server it could reach: empty lines
/// before it are skipped (RFC 9112 section 2.2), the method is any token in any case, and
/// spaces or tabs may be repeated around the target. Blank lines, a method or blanks that
/// still go on after [`PEEK_LIMIT`] bytes are no protocol's start: refused like a hop, since a
/// server that skips them would read a request after them.
fn classify(bytes: &[u8]) -> Verdict {
    let unfinished = if bytes.len() < PEEK_LIMIT {
        Verdict::Undecided
    } else {
        Verdict::Hop
    };
    let Some(start) = bytes.iter().position(|b| !b"\r\n".contains(b)) else {
        return unfinished;
    };
    let line = &bytes[start..];
    let method = line.iter().take_while(|b| is_token(**b)).count();
    if method == line.len() {
        return unfinished;
    }
    if method == 0 || !is_blank(line[method]) {
        return Verdict::Other;
    }
    if line[..method].eq_ignore_ascii_case(b"CONNECT") {
        return Verdict::Hop;
    }
    let target = &line[method..];
    let Some(from) = target.iter().position(|b| !is_blank(*b)) else {
        return unfinished;
    };
    let target = &target[from..];
    // Origin form (`/path`) is for the host itself, however long it is.
    if target[0] == b'/' {
        return Verdict::Other;
    }
    let end = target
        .iter()
        .position(|b| is_blank(*b) || b"\r\n".contains(b));
    if target[..end.unwrap_or(target.len())]
        .windows(3)
        .any(|w| w == b"://")
    {
        Verdict::Hop
    } else if end.is_none() && bytes.len() < PEEK_LIMIT {
        Verdict::Undecided
    } else {
        Verdict::Other
    }
}

/// A character of an HTTP token (a method): RFC 9110's `tchar`.
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

#[cfg(test)]
mod tests {
    use crate::services::network::tunnel::*;

    #[test]
    fn request_lines_naming_another_hop_are_told_apart() {
        assert_eq!(classify(b"CON"), Verdict::Undecided);
        assert_eq!(classify(b"CONNECT evil:443 HTTP/1.1\r\n"), Verdict::Hop);
        assert_eq!(classify(b"GET http://evil/ HTTP/1.1\r\n"), Verdict::Hop);
        assert_eq!(classify(b"GET /model HTTP/1.1\r\n"), Verdict::Other);
        assert_eq!(classify(b"GET /mod"), Verdict::Other);
        assert_eq!(classify(b"GET http:/"), Verdict::Undecided);
        assert_eq!(classify(b"\x16\x03\x01\x02\x00"), Verdict::Other);
        assert_eq!(classify(b"SSH-2.0-OpenSSH\r\n"), Verdict::Other);
        assert_eq!(
            classify(b"\x00\x00\x00\x08\x04\xd2\x16\x2f"),
            Verdict::Other
        );
    }

    #[test]
    fn lenient_spellings_of_another_hop_are_hops_too() {
        for hop in [
            &b"\r\nCONNECT evil:443 HTTP/1.1\r\n"[..],
            b"\n\n\r\nGET http://evil/ HTTP/1.1\r\n",
            b"connect evil:443 HTTP/1.1\r\n",
            b"Connect\tevil:443 HTTP/1.1\r\n",
            b"GET  http://evil/ HTTP/1.1\r\n",
            b"GET\thttp://evil/ HTTP/1.1\r\n",
            b"get HTTP://evil/ HTTP/1.1\r\n",
            b"PROPFINDPROPFINDPROPFIND http://evil/ HTTP/1.1\r\n",
            b"X-LONG-EXTENSION-METHOD http://evil/\r\n",
        ] {
            assert_eq!(
                classify(hop),
                Verdict::Hop,
                "{}",
                String::from_utf8_lossy(hop)
            );
        }
        assert_eq!(classify(b"\r\n"), Verdict::Undecided);
        assert_eq!(classify(b"\r\nCONN"), Verdict::Undecided);
        assert_eq!(classify(b"GET  "), Verdict::Undecided);
        assert_eq!(classify(b"GET  /a HTTP/1.1\r\n"), Verdict::Other);
        assert_eq!(classify(b"GET /"), Verdict::Other);
        assert_eq!(classify(b"EHLO mail.example.org\r\n"), Verdict::Other);
    }

    #[test]
    fn what_never_ends_its_blanks_or_method_is_refused_at_the_limit() {
        let blank_lines = [&b"\r\n".repeat(PEEK_LIMIT)[..], b"CONNECT evil:443"].concat();
        assert_eq!(classify(&blank_lines), Verdict::Hop);
        let spaces = [&b"GET"[..], &b" ".repeat(PEEK_LIMIT), b"http://evil/"].concat();
        assert_eq!(classify(&spaces), Verdict::Hop);
        assert_eq!(classify(&b"A".repeat(PEEK_LIMIT)), Verdict::Hop);
        let long_path = [&b"GET /"[..], &b"a".repeat(PEEK_LIMIT)].concat();
        assert_eq!(classify(&long_path), Verdict::Other);
    }
}
