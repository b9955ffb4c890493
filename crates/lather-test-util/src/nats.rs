//! A real `nats-server` for tests: started on a free loopback port with its own temporary
//! directory, stopped by its PID. The Debian package `nats-server` provides the binary;
//! without it the tests fail and say how to install it.

use crate::ScratchDir;
pub use crate::free_port;
use std::io::Read;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running (or stopped, between `stop` and `start_again`) `nats-server`.
#[derive(Debug)]
pub struct NatsServer {
    child: Option<Child>,
    port: u16,
    /// Logs, `nats.conf`, JetStream's storage; removed after the server is stopped.
    dir: ScratchDir,
    /// Whether JetStream is enabled (its storage in `dir`, kept across restarts).
    jetstream: bool,
    /// Whether `dir/nats.conf` is passed with `-c` (see [`NatsServer::start_configured`]).
    configured: bool,
}

impl NatsServer {
    /// Starts a server on a free loopback port and waits until it accepts connections.
    pub fn start(name: &str) -> NatsServer {
        Self::start_with(name, false)
    }

    /// Starts a server with JetStream enabled (storage in its temporary directory).
    pub fn start_jetstream(name: &str) -> NatsServer {
        Self::start_with(name, true)
    }

    /// Starts a server reading the configuration `conf` (nats-server's own format, e.g. a
    /// `tls { … }` or `authorization { … }` block), written to `nats.conf` in a directory
    /// of its own; the address and port are still chosen here.
    pub fn start_configured(name: &str, conf: &str) -> NatsServer {
        Self::start_configured_in(Self::scratch_dir(name), conf)
    }

    /// [`NatsServer::start_configured`] in `dir`, which the server owns from now on:
    /// `conf` may name files the caller wrote there first.
    pub fn start_configured_in(dir: ScratchDir, conf: &str) -> NatsServer {
        dir.write("nats.conf", conf);
        let mut server = NatsServer {
            child: None,
            port: free_port(),
            dir,
            jetstream: false,
            configured: true,
        };
        server.start_first();
        server
    }

    /// A fresh directory for a server named `name` (`lather-nats-{name}-…`), to write the
    /// files its configuration names into before [`NatsServer::start_configured_in`].
    pub fn scratch_dir(name: &str) -> ScratchDir {
        ScratchDir::new(&format!("nats-{name}"))
    }

    fn start_with(name: &str, jetstream: bool) -> NatsServer {
        let mut server = NatsServer {
            child: None,
            port: free_port(),
            dir: Self::scratch_dir(name),
            jetstream,
            configured: false,
        };
        server.start_first();
        server
    }

    /// `tls://127.0.0.1:PORT`, for a server started with a `tls { … }` block.
    pub fn tls_url(&self) -> String {
        format!("tls://127.0.0.1:{}", self.port)
    }

    /// `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The server's temporary directory (logs), removed when the server is dropped.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Starts the server again on the same port (after [`NatsServer::stop`]), trying a
    /// few times should the port be held for a moment by another socket.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "already running");
        let mut last = String::new();
        for _ in 0..5 {
            match self.spawn_and_wait() {
                Ok(()) => return,
                Err(why) => last = why,
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("{last}");
    }

    /// Starts the server on a fresh free port until one start succeeds: a port found free
    /// may be taken by another test before `nats-server` binds it.
    fn start_first(&mut self) {
        let mut last = String::new();
        for _ in 0..5 {
            match self.spawn_and_wait() {
                Ok(()) => return,
                Err(why) => {
                    last = why;
                    self.port = free_port();
                }
            }
        }
        panic!("{last}");
    }

    /// Spawns `nats-server` on `self.port` and waits until it greets a client with its
    /// `INFO` line. A server that exits (its port taken) or stays silent is an error.
    fn spawn_and_wait(&mut self) -> Result<(), String> {
        let mut command = Command::new("nats-server");
        command
            .args(["-a", "127.0.0.1", "-p", &self.port.to_string()])
            .arg("-l")
            .arg(self.dir.join("nats.log"));
        if self.configured {
            command.arg("-c").arg(self.dir.join("nats.conf"));
        }
        if self.jetstream {
            command
                .arg("-js")
                .arg("-sd")
                .arg(self.dir.join("jetstream"));
        }
        let spawned = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
                "nats-server is not installed; these tests need a real NATS server: \
                 apt-get install -y nats-server"
            ),
            Err(e) => panic!("cannot start nats-server: {e}"),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "nats-server on port {} exited ({status}); its log is in {}",
                    self.port,
                    self.dir.display()
                ));
            }
            if greets(self.port) {
                self.child = Some(child);
                return Ok(());
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "nats-server did not greet on port {} within 10 s",
                    self.port
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server (SIGKILL to its PID) and waits for it to exit.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Whether a NATS server on `port` answers a new connection with its `INFO` greeting
/// (which a socket connected to itself, or to another kind of listener, does not).
fn greets(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    if stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .is_err()
    {
        return false;
    }
    let mut first = [0_u8; 4];
    stream.read_exact(&mut first).is_ok() && &first == b"INFO"
}

impl Drop for NatsServer {
    /// Stops the server; its directory goes afterwards, when the `dir` field is dropped.
    fn drop(&mut self) {
        self.stop();
    }
}
