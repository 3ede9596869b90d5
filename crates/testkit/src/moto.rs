//! A KMS to test against: moto's server (`pip install 'moto[server]'`), a real HTTP endpoint
//! speaking KMS's JSON protocol with SigV4-signed requests, on a free port of its own per
//! test. Its keys are real AES keys and its `EncryptionContext` is bound into each ciphertext.
//! Under `CI=true` a missing moto fails the test.

use std::{
    net::TcpStream,
    process::{Child, Command, Stdio},
    sync::Mutex,
    time::{Duration, Instant},
};

use aws_sdk_kms::config::{Credentials, Region};
use tessera_custody_aws_kms::{config_loader, AwsKmsConfig};

/// The region the tests use.
pub const REGION: &str = "us-east-1";

/// A running moto server; stopped when dropped.
#[derive(Debug)]
pub struct Moto {
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
    child: Mutex<Option<Child>>,
}

/// The moto server command, if installed.
fn moto_server() -> Option<&'static str> {
    let found = Command::new("moto_server")
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        if crate::db::postgres_required() {
            panic!("CI=true but moto is not installed (pip install 'moto[server]'): the KMS tests must run");
        }
        eprintln!("skipped: moto is not installed (pip install 'moto[server]')");
        return None;
    }
    Some("moto_server")
}

impl Moto {
    /// A fresh server, answering; `None` (the test skips) without moto.
    pub fn start() -> Option<Self> {
        let program = moto_server()?;
        let port = crate::process::free_port();
        let child = Command::new(program)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn moto_server");
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "moto_server did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(Self {
            endpoint: format!("http://127.0.0.1:{port}"),
            child: Mutex::new(Some(child)),
        })
    }

    /// The environment a child process needs to reach it through the standard chain
    /// (credentials and region; the endpoint is given apart).
    pub fn env() -> [(&'static str, &'static str); 3] {
        [
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_REGION", REGION),
        ]
    }

    /// An SDK configuration for this process, with the test credentials.
    pub async fn sdk_config(&self) -> aws_config::SdkConfig {
        config_loader(&self.config(""))
            .credentials_provider(Credentials::new("testing", "testing", None, None, "test"))
            .region(Region::new(REGION))
            .load()
            .await
    }

    /// A custody configuration naming `key_id` on this server.
    pub fn config(&self, key_id: &str) -> AwsKmsConfig {
        AwsKmsConfig {
            key_id: key_id.to_string(),
            endpoint: Some(self.endpoint.clone()),
            region: Some(REGION.to_string()),
        }
    }

    /// A new symmetric encryption key; its id.
    pub async fn create_key(&self) -> String {
        let client = self.client().await;
        let created = client.create_key().send().await.expect("CreateKey");
        created
            .key_metadata()
            .expect("metadata")
            .key_id()
            .to_string()
    }

    /// A KMS client on this server (to schedule a key's deletion, say).
    pub async fn client(&self) -> aws_sdk_kms::Client {
        let sdk = self.sdk_config().await;
        let config = aws_sdk_kms::config::Builder::from(&sdk)
            .endpoint_url(&self.endpoint)
            .build();
        aws_sdk_kms::Client::from_conf(config)
    }

    /// Stops the server, as an outage would.
    pub fn stop(&self) {
        if let Some(mut child) = self.child.lock().expect("moto lock").take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.stop();
    }
}
