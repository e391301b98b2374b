//! Published ports: `run` listens on the host's loopback and forwards each connection to a
//! port on the sandbox's loopback, with a socket made inside ([`crate::base::sandbox::SocketFactory`])
//! and connected from outside.

use crate::base::invalid::Invalid;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket, TcpStream};

use crate::base::error::{Error, Result};
use crate::base::sandbox::SocketFactory;
use crate::store::network_report::{PROXY_PORT, Published};

/// One `--publish [HOST_PORT:]PORT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublishRequest {
    /// The host's port (0: the kernel picks one).
    pub host_port: u16,
    /// The port inside.
    pub port: u16,
}

impl PublishRequest {
    /// Parses `[HOST_PORT:]PORT`; anything else is `invalid_input`.
    pub fn parse(given: &str) -> Result<PublishRequest> {
        let invalid = |why: &str| Invalid::Publish {
            given: given.to_string(),
            why: why.to_string(),
        };
        let (host, inside) = match given.split_once(':') {
            Some((host, inside)) => (Some(host), inside),
            None => (None, given),
        };
        let port = (inside.parse::<u16>().ok().filter(|port| *port != 0))
            .ok_or_else(|| invalid("the port inside must be a number from 1 to 65535"))?;
        let host_port = (host.map_or(Ok(0), str::parse::<u16>))
            .map_err(|_| invalid("the host's port must be a number from 0 to 65535"))?;
        Ok(PublishRequest { host_port, port })
    }

    /// Refuses the proxy's own port inside when the proxy listens there.
    pub fn check_against_proxy(&self, proxy: bool) -> Result<()> {
        if proxy && self.port == PROXY_PORT {
            return Err(Error::from(Invalid::PublishProxyPort {
                port: self.port,
                proxy_port: PROXY_PORT,
            }));
        }
        Ok(())
    }

    /// Listens on the host's `127.0.0.1:HOST_PORT`; a port in use is `invalid_input`.
    pub fn bind(&self) -> Result<(std::net::TcpListener, Published)> {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, self.host_port))
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| Invalid::PublishListen {
                host_port: self.host_port,
                port: self.port,
                error: e.to_string(),
            })?;
        let host_port = listener
            .local_addr()
            .map_err(|e| Error::io("cannot read a published port's address", e))?
            .port();
        Ok((
            listener,
            Published {
                host: Ipv4Addr::LOCALHOST.to_string(),
                host_port,
                port: self.port,
            },
        ))
    }
}

/// Accepts on the host's listener and forwards each connection to `port` inside.
pub(crate) async fn forward(listener: TcpListener, port: u16, factory: Arc<Mutex<SocketFactory>>) {
    loop {
        let Ok((mut outside, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let factory = Arc::clone(&factory);
        tokio::spawn(async move {
            if let Ok(mut inside) = connect_inside(port, factory).await {
                let _ = outside.set_nodelay(true);
                let _ = tokio::io::copy_bidirectional(&mut outside, &mut inside).await;
            }
        });
    }
}

/// A connection to `127.0.0.1:port` in the sandbox, from a socket made there.
async fn connect_inside(
    port: u16,
    factory: Arc<Mutex<SocketFactory>>,
) -> std::io::Result<TcpStream> {
    let socket = tokio::task::spawn_blocking(move || {
        factory.lock().unwrap_or_else(|e| e.into_inner()).socket()
    })
    .await
    .map_err(std::io::Error::other)??;
    let std_socket = std::net::TcpStream::from(socket);
    std_socket.set_nonblocking(true)?;
    let stream = TcpSocket::from_std_stream(std_socket)
        .connect(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
        .await?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use crate::services::network::publish::*;

    #[test]
    fn a_publish_is_a_port_or_host_port_and_port() {
        let parse = |s: &str| PublishRequest::parse(s).map(|p| (p.host_port, p.port));
        assert_eq!(parse("3000").unwrap(), (0, 3000));
        assert_eq!(parse("8080:3000").unwrap(), (8080, 3000));
        assert_eq!(parse("0:3000").unwrap(), (0, 3000));
        for bad in ["0", "x", "x:1", "1:", ":1", "1:2:3", "70000"] {
            assert!(PublishRequest::parse(bad).is_err(), "{bad}");
        }
    }
}
