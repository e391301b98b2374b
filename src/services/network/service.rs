//! The network service of one run: a thread of `run`'s with a small tokio runtime that serves
//! the proxy and the published ports for as long as the command runs.

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::oneshot;

use crate::base::error::Result;
use crate::base::sandbox::SocketFactory;
use crate::services::network::allow::Allowlist;
use crate::services::network::dns::{self, Lookups};
use crate::services::network::proxy::{self, Proxy};
use crate::services::network::publish::{self, PublishRequest};
use crate::store::network_report::{Published, Refusal};

/// How long the proxy goes on, once the command has ended, deciding what it sent last.
const DRAIN_LIMIT: Duration = Duration::from_millis(500);

/// What a run's network service will serve: the allowlist (a proxy when it is not empty) and
/// the host's listeners of the published ports (bound before the command starts).
#[derive(Debug, Default)]
pub struct NetworkPlan {
    /// The `--allow-host` entries.
    pub allow: Allowlist,
    /// Whether to answer the command's name lookups (the network is not the host's).
    pub dns: bool,
    listeners: Vec<(std::net::TcpListener, Published)>,
}

impl NetworkPlan {
    /// Binds the published ports on the host's loopback; a port in use fails here.
    pub fn bind(allow: Allowlist, publish: &[PublishRequest]) -> Result<NetworkPlan> {
        for request in publish {
            request.check_against_proxy(!allow.is_empty())?;
        }
        let listeners = publish
            .iter()
            .map(PublishRequest::bind)
            .collect::<Result<_>>()?;
        Ok(NetworkPlan {
            allow,
            dns: false,
            listeners,
        })
    }

    /// Whether there is anything to serve.
    pub fn is_needed(&self) -> bool {
        self.dns || !self.allow.is_empty() || !self.listeners.is_empty()
    }

    /// The published ports, as bound.
    pub fn published(&self) -> Vec<Published> {
        self.listeners.iter().map(|(_, p)| p.clone()).collect()
    }
}

/// The running service; stopping it (or dropping it) ends the proxy and closes the ports.
#[derive(Debug)]
pub struct NetworkService {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    refused: Arc<Mutex<Vec<Refusal>>>,
    lookups: Arc<Mutex<Lookups>>,
}

/// What the network service kept from the command.
#[derive(Debug, Default)]
pub struct Kept {
    /// What the proxy refused.
    pub refused: Vec<Refusal>,
    /// The names looked up (each once).
    pub lookups: Vec<String>,
}

impl NetworkService {
    /// Starts serving `plan` with sockets from `factory` (whose helper has been started).
    pub fn start(plan: NetworkPlan, factory: SocketFactory) -> std::io::Result<NetworkService> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let refused = Arc::new(Mutex::new(Vec::new()));
        let lookups = Arc::new(Mutex::new(Lookups::default()));
        let answered = Arc::clone(&lookups);
        let proxy = Arc::new(Proxy {
            allow: plan.allow.clone(),
            refused: Arc::clone(&refused),
            undecided: AtomicUsize::new(0),
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("a3s-iso-network".into())
            .spawn(move || {
                runtime.block_on(serve(plan, proxy, answered, factory, stopped));
                runtime.shutdown_timeout(Duration::from_millis(100));
            })?;
        Ok(NetworkService {
            stop: Some(stop),
            thread: Some(thread),
            refused,
            lookups,
        })
    }

    /// Ends the service; returns what the proxy refused and the names looked up.
    pub fn finish(mut self) -> Kept {
        self.end();
        let refused = std::mem::take(&mut *self.refused.lock().unwrap_or_else(|e| e.into_inner()));
        let lookups = std::mem::take(&mut *self.lookups.lock().unwrap_or_else(|e| e.into_inner()));
        Kept {
            refused,
            lookups: lookups.into_names(),
        }
    }

    fn end(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for NetworkService {
    fn drop(&mut self) {
        self.end();
    }
}

async fn serve(
    plan: NetworkPlan,
    proxy: Arc<Proxy>,
    lookups: Arc<Mutex<Lookups>>,
    factory: SocketFactory,
    stopped: oneshot::Receiver<()>,
) {
    let factory = Arc::new(Mutex::new(factory));
    if plan.dns {
        // The helper sends the responder's socket first, before the proxy's listener.
        let received = factory
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .dns_socket();
        // No socket: the helper failed before the command started, and says why.
        if let Ok(fd) = received {
            let socket = std::net::UdpSocket::from(fd);
            if socket.set_nonblocking(true).is_ok()
                && let Ok(socket) = tokio::net::UdpSocket::from_std(socket)
            {
                tokio::spawn(dns::serve(socket, lookups));
            }
        }
    }
    for (listener, published) in plan.listeners {
        if let Ok(listener) = tokio::net::TcpListener::from_std(listener) {
            tokio::spawn(publish::forward(
                listener,
                published.port,
                Arc::clone(&factory),
            ));
        }
    }
    let drained = Arc::clone(&proxy);
    if !plan.allow.is_empty() {
        let factory = Arc::clone(&factory);
        tokio::spawn(async move {
            let received = tokio::task::spawn_blocking(move || {
                factory.lock().unwrap_or_else(|e| e.into_inner()).listener()
            })
            .await;
            // No listener: the helper failed before the command started, and says why.
            let Ok(Ok(fd)) = received else { return };
            let listener = std::net::TcpListener::from(fd);
            if listener.set_nonblocking(true).is_ok()
                && let Ok(listener) = tokio::net::TcpListener::from_std(listener)
            {
                proxy::serve(listener, proxy).await;
            }
        });
    }
    let _ = stopped.await;
    proxy::drain(&drained, DRAIN_LIMIT).await;
}
