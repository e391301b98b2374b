//! The allowlist proxy: HTTP/1.1 `CONNECT host:port` tunnels and plain HTTP requests in
//! absolute form, served on the listener the sandbox helper made inside. Each host is checked
//! against the allowlist, resolved here, and every address checked before the connection is
//! made to that very address: a name that resolves to the host's loopback, a private network
//! or a metadata service gets nowhere, however its DNS answers change.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderMap, HeaderName};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};

use crate::services::network::allow::{Allowlist, Target, bare, target_of};
use crate::services::network::tunnel::{self, Relayed};
use crate::store::network_report::{MAX_REFUSALS, Refusal, RefusalReason};

type Body = BoxBody<Bytes, hyper::Error>;

/// How much of a refused host is recorded: a host name's longest.
const MAX_HOST: usize = 253;

/// The proxy's state: what it allows and what it refused.
pub(crate) struct Proxy {
    pub(crate) allow: Allowlist,
    pub(crate) refused: Arc<Mutex<Vec<Refusal>>>,
    /// The command's connections not yet read to their end (a tunnel's until its first bytes
    /// were looked at): what may still hold a request to decide and record.
    pub(crate) undecided: AtomicUsize,
}

/// Counts one connection in [`Proxy::undecided`] while it lives.
pub(crate) struct Undecided(Arc<Proxy>);

impl Undecided {
    fn new(proxy: &Arc<Proxy>) -> Undecided {
        proxy.undecided.fetch_add(1, Ordering::SeqCst);
        Undecided(Arc::clone(proxy))
    }
}

impl Drop for Undecided {
    fn drop(&mut self) {
        self.0.undecided.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Once the command has ended (its connections are closed): lets what it sent last be decided
/// and recorded, for up to `limit`.
pub(crate) async fn drain(proxy: &Proxy, limit: Duration) {
    let deadline = tokio::time::Instant::now() + limit;
    while proxy.undecided.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Serves every connection the command makes to the proxy until the runtime ends.
pub(crate) async fn serve(listener: TcpListener, proxy: Arc<Proxy>) {
    loop {
        // Out of descriptors and the like: let connections end before the next accept.
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let (proxy, recorder) = (Arc::clone(&proxy), Arc::clone(&proxy));
        let undecided = Undecided::new(&proxy);
        tokio::spawn(async move {
            let _undecided = undecided;
            let service = hyper::service::service_fn(move |req| {
                let proxy = Arc::clone(&proxy);
                async move { Ok::<_, Infallible>(proxy.handle(req).await) }
            });
            // A command that shuts its side down after a request still gets it decided (and
            // a refusal recorded): hyper would otherwise drop the request half-way.
            let served = hyper::server::conn::http1::Builder::new()
                .half_close(true)
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades()
                .await;
            // hyper answers what it cannot parse (431 for a huge head, 400) on its own: those
            // are refusals too.
            if let Err(e) = served
                && (e.is_parse() || e.is_parse_too_large())
            {
                recorder.record("", 0, RefusalReason::BadRequest, None);
            }
        });
    }
}

impl Proxy {
    async fn handle(self: Arc<Self>, req: Request<Incoming>) -> Response<Body> {
        if req.method() == Method::CONNECT {
            self.connect(req).await
        } else {
            self.forward(req).await
        }
    }

    /// `CONNECT host:port`: a tunnel to the checked address, whose first bytes are looked at.
    async fn connect(self: Arc<Self>, req: Request<Incoming>) -> Response<Body> {
        let Some(authority) = req.uri().authority().cloned() else {
            return self.refuse("", 0, RefusalReason::BadRequest, None);
        };
        let host = authority.host();
        let Some(port) = authority.port_u16() else {
            return self.refuse(host, 0, RefusalReason::BadRequest, None);
        };
        let upstream = match self.open(host, port).await {
            Ok(upstream) => upstream,
            Err(response) => return response,
        };
        let host = bare(host).to_string();
        let undecided = Undecided::new(&self);
        tokio::spawn(async move {
            let Ok(upgraded) = hyper::upgrade::on(req).await else {
                return;
            };
            // The command's own TCP stream back, with what it sent after the CONNECT's head:
            // the tunnel relays between two sockets, without hyper's buffering in between.
            // The connection is always a TcpStream: the proxy serves nothing else.
            let Ok(parts) = upgraded.downcast::<TokioIo<TcpStream>>() else {
                return;
            };
            let (client, already) = (parts.io.into_inner(), parts.read_buf.to_vec());
            if tunnel::relay(client, already, upstream, undecided).await == Relayed::AnotherHop {
                self.record(&host, port, RefusalReason::ConnectInTunnel, None);
            }
        });
        Response::new(full(Bytes::new()))
    }

    /// A plain request in absolute form (`GET http://host/path`), sent on in origin form
    /// without its hop-by-hop and `Proxy-*` headers.
    async fn forward(self: Arc<Self>, req: Request<Incoming>) -> Response<Body> {
        let uri = req.uri().clone();
        let Some(authority) = uri.authority().filter(|_| uri.scheme_str() == Some("http")) else {
            let (host, port) = (uri.host().unwrap_or_default(), uri.port_u16().unwrap_or(0));
            return self.refuse(host, port, RefusalReason::BadRequest, None);
        };
        let (host, port) = (authority.host(), authority.port_u16().unwrap_or(80));
        let upstream = match self.open(host, port).await {
            Ok(upstream) => upstream,
            Err(response) => return response,
        };
        let Ok((mut sender, connection)) =
            hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await
        else {
            return status(StatusCode::BAD_GATEWAY, "cannot talk to the host");
        };
        tokio::spawn(connection);
        let (mut parts, body) = req.into_parts();
        let path = uri.path_and_query().map_or("/", |pq| pq.as_str());
        parts.uri = match path.parse() {
            Ok(origin) => origin,
            Err(_) => return self.refuse(host, port, RefusalReason::BadRequest, None),
        };
        parts.version = hyper::Version::HTTP_11;
        strip_hop_by_hop(&mut parts.headers);
        // The host the request was checked for, never the command's own Host header (which
        // could name another virtual host at that address) nor its userinfo (RFC 9112 3.2.2).
        let checked = match authority.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        };
        let Ok(checked) = checked.parse() else {
            return self.refuse(host, port, RefusalReason::BadRequest, None);
        };
        parts.headers.insert(header::HOST, checked);
        match sender.send_request(Request::from_parts(parts, body)).await {
            Ok(response) => {
                let (mut parts, body) = response.into_parts();
                strip_hop_by_hop(&mut parts.headers);
                Response::from_parts(parts, body.boxed())
            }
            Err(_) => status(StatusCode::BAD_GATEWAY, "the host's answer failed"),
        }
    }

    /// A connection to `host:port` if it is allowed, made to an address checked here.
    async fn open(&self, host: &str, port: u16) -> Result<TcpStream, Response<Body>> {
        let Some(target) = target_of(host) else {
            return Err(self.refuse(host, port, RefusalReason::BadRequest, None));
        };
        if let Err(reason) = self.allow.check(&target, port) {
            return Err(self.refuse(host, port, reason, None));
        }
        let addresses = match &target {
            Target::Ip(ip) => vec![*ip],
            Target::Name(name) => match resolve(name, port).await {
                Ok(addresses) if !addresses.is_empty() => addresses,
                _ => return Err(self.refuse(host, port, RefusalReason::Unresolvable, None)),
            },
        };
        let permitted: Vec<IpAddr> = addresses
            .iter()
            .copied()
            .filter(|ip| self.allow.permits_address(*ip, port))
            .collect();
        if permitted.is_empty() {
            let reason = RefusalReason::AddressNotAllowed;
            return Err(self.refuse(host, port, reason, Some(addresses[0])));
        }
        for ip in permitted {
            if let Ok(stream) = TcpStream::connect(SocketAddr::new(ip, port)).await {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
        }
        Err(status(
            StatusCode::BAD_GATEWAY,
            "cannot connect to the host",
        ))
    }

    fn record(&self, host: &str, port: u16, reason: RefusalReason, address: Option<IpAddr>) {
        let mut refused = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        if refused.len() < MAX_REFUSALS {
            refused.push(Refusal {
                host: bounded(bare(host)),
                port,
                reason,
                address,
            });
        }
    }

    fn refuse(
        &self,
        host: &str,
        port: u16,
        reason: RefusalReason,
        address: Option<IpAddr>,
    ) -> Response<Body> {
        self.record(host, port, reason, address);
        let code = match reason {
            RefusalReason::BadRequest => StatusCode::BAD_REQUEST,
            RefusalReason::Unresolvable => StatusCode::BAD_GATEWAY,
            _ => StatusCode::FORBIDDEN,
        };
        status(code, &format!("a3s-iso refused {host}:{port}: {reason}"))
    }
}

/// The host as recorded: at most [`MAX_HOST`] bytes of what the command sent (a name is never
/// longer), so that a flood of refusals keeps the run's record small.
fn bounded(host: &str) -> String {
    if host.len() <= MAX_HOST {
        return host.to_string();
    }
    let mut end = MAX_HOST;
    while !host.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &host[..end])
}

fn full(bytes: Bytes) -> Body {
    Full::new(bytes).map_err(|never| match never {}).boxed()
}

fn status(code: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(full(Bytes::from(format!("{text}\n"))));
    *response.status_mut() = code;
    response
}

/// Drops the headers that belong to one hop: those `Connection` names, the standard ones and
/// every `Proxy-*` (credentials for this proxy never travel on).
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let mut dropped: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| name.trim().parse().ok())
        .collect();
    dropped.extend([
        header::CONNECTION,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
        HeaderName::from_static("keep-alive"),
    ]);
    dropped.extend(
        headers
            .keys()
            .filter(|k| k.as_str().starts_with("proxy-"))
            .cloned(),
    );
    for name in dropped {
        headers.remove(name);
    }
}

/// The addresses of `name`. With the `fault-injection` feature, `A3S_ISO_TEST_RESOLVE`
/// (`name=addr|addr,name=addr`) answers first, so tests can make an allowed name resolve
/// anywhere, after `A3S_ISO_TEST_RESOLVE_DELAY_MS` (a slow resolver).
async fn resolve(name: &str, port: u16) -> std::io::Result<Vec<IpAddr>> {
    #[cfg(feature = "fault-injection")]
    if let Ok(Ok(delay)) = std::env::var("A3S_ISO_TEST_RESOLVE_DELAY_MS").map(|ms| ms.parse()) {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    #[cfg(feature = "fault-injection")]
    if let Some((_, addresses)) = std::env::var("A3S_ISO_TEST_RESOLVE")
        .unwrap_or_default()
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
    {
        return Ok(addresses
            .split('|')
            .filter_map(|a| a.parse::<IpAddr>().ok())
            .collect());
    }
    Ok(tokio::net::lookup_host((name, port))
        .await?
        .map(|a| a.ip())
        .collect())
}

#[cfg(test)]
mod tests {
    use crate::services::network::proxy::*;

    #[test]
    fn hop_by_hop_and_proxy_headers_are_dropped() {
        let mut headers = HeaderMap::new();
        for (k, v) in [
            ("connection", "close, x-secret"),
            ("x-secret", "1"),
            ("proxy-authorization", "Basic eA=="),
            ("keep-alive", "5"),
            ("accept", "*/*"),
        ] {
            headers.insert(HeaderName::from_static(k), v.parse().unwrap());
        }
        strip_hop_by_hop(&mut headers);
        let left: Vec<&str> = headers.keys().map(|k| k.as_str()).collect();
        assert_eq!(left, ["accept"]);
    }

    #[test]
    fn a_recorded_host_is_bounded() {
        assert_eq!(bounded("example.org"), "example.org");
        let long = "\u{e9}".repeat(40_000);
        let kept = bounded(&long);
        assert!(kept.len() <= MAX_HOST + 3, "{}", kept.len());
        assert!(kept.ends_with("..."));
    }
}
