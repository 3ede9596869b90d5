//! A webhook receiver on loopback for the delivery tests: a plain HTTP/1.1 server on its own
//! threads that records every POST (headers and body) and answers the status it is set to
//! (200 unless told otherwise), optionally after a delay. Each signature is checked as Basis
//! Theory's verification snippet checks it: the body parsed, encoded again as stable JSON, and
//! verified with RSA-PSS/SHA-256 against the PEM the test gives.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{TcpListener, TcpStream},
    sync::{
        atomic::{AtomicU16, AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use serde_json::Value;

/// One POST as it arrived.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// Lower-case header names and their values.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// The status it was answered with.
    pub answered: u16,
}

impl Delivery {
    /// The value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    /// `event.id`.
    pub fn event_id(&self) -> String {
        self.json()["event"]["id"]
            .as_str()
            .expect("event.id")
            .to_string()
    }

    /// `event.type`.
    pub fn event_type(&self) -> String {
        self.json()["event"]["type"]
            .as_str()
            .expect("event.type")
            .to_string()
    }
}

/// A running receiver.
#[derive(Debug, Clone)]
pub struct Receiver {
    /// `http://127.0.0.1:<port>/hook`.
    pub url: String,
    status: Arc<AtomicU16>,
    delay_ms: Arc<AtomicU64>,
    deliveries: Arc<Mutex<Vec<Delivery>>>,
    raw: Arc<Mutex<Option<Vec<u8>>>>,
}

impl Receiver {
    /// Starts one on a free loopback port.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let receiver = Receiver {
            url: format!("http://127.0.0.1:{port}/hook"),
            status: Arc::new(AtomicU16::new(200)),
            delay_ms: Arc::new(AtomicU64::new(0)),
            deliveries: Arc::new(Mutex::new(Vec::new())),
            raw: Arc::new(Mutex::new(None)),
        };
        let r = receiver.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let r = r.clone();
                std::thread::spawn(move || r.serve(stream));
            }
        });
        receiver
    }

    /// Answers `status` from now on.
    pub fn answer(&self, status: u16) {
        self.status.store(status, Ordering::SeqCst);
    }

    /// Answers with these bytes from now on (a hostile answer: a redirect, a body that never
    /// ends), recorded with `status`; the connection is then held open for a minute.
    pub fn answer_raw(&self, status: u16, raw: &[u8]) {
        self.status.store(status, Ordering::SeqCst);
        *self.raw.lock().expect("raw") = Some(raw.to_vec());
    }

    /// Waits `delay` before each answer from now on.
    pub fn delay(&self, delay: Duration) {
        self.delay_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }

    /// Every POST so far, in arrival order.
    pub fn deliveries(&self) -> Vec<Delivery> {
        self.deliveries.lock().expect("deliveries").clone()
    }

    /// The POSTs answered 2xx so far.
    pub fn accepted(&self) -> Vec<Delivery> {
        self.deliveries()
            .into_iter()
            .filter(|d| (200..300).contains(&d.answered))
            .collect()
    }

    /// Waits until `done` holds of the POSTs so far, or panics after `within`.
    pub fn wait_for(&self, within: Duration, what: &str, done: impl Fn(&[Delivery]) -> bool) {
        let start = Instant::now();
        loop {
            let seen = self.deliveries();
            if done(&seen) {
                return;
            }
            assert!(
                start.elapsed() < within,
                "{what}: not within {within:?}; received {} POSTs: {:?}",
                seen.len(),
                seen.iter().map(|d| d.event_type()).collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn serve(&self, stream: TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut stream = stream;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let mut headers = Vec::new();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 {
                    return;
                }
                let h = h.trim_end();
                if h.is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':') {
                    headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
                }
            }
            let length: usize = headers
                .iter()
                .find(|(k, _)| k == "content-length")
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0u8; length];
            if reader.read_exact(&mut body).is_err() {
                return;
            }
            let delay = self.delay_ms.load(Ordering::SeqCst);
            if delay > 0 {
                std::thread::sleep(Duration::from_millis(delay));
            }
            let status = self.status.load(Ordering::SeqCst);
            self.deliveries.lock().expect("deliveries").push(Delivery {
                headers,
                body,
                answered: status,
            });
            let raw = self.raw.lock().expect("raw").clone();
            if let Some(raw) = raw {
                let _ = stream.write_all(&raw);
                std::thread::sleep(Duration::from_secs(60));
                return;
            }
            let answer = format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\n\r\n");
            if stream.write_all(answer.as_bytes()).is_err() {
                return;
            }
        }
    }
}

/// Whether `delivery` carries a valid `<prefix>-SIGNATURE` by the key whose public PEM is
/// `pem`, checked as Basis Theory's snippet does: `JSON.parse` the body, `json-stable-stringify`
/// it, and verify RSA-PSS with SHA-256.
pub fn signature_verifies(pem: &str, delivery: &Delivery, prefix: &str) -> bool {
    use base64::{engine::general_purpose::STANDARD, Engine};
    use rsa::{pkcs8::DecodePublicKey, pss::Signature, pss::VerifyingKey, signature::Verifier};
    let Some(sig) = delivery.header(&format!("{prefix}-SIGNATURE")) else {
        return false;
    };
    let Ok(sig) = STANDARD.decode(sig) else {
        return false;
    };
    let Ok(signature) = Signature::try_from(sig.as_slice()) else {
        return false;
    };
    let public = rsa::RsaPublicKey::from_public_key_pem(pem).expect("a public key PEM");
    let stable = tessera_domain::webhook::stable_json(&delivery.json());
    VerifyingKey::<sha2::Sha256>::new(public)
        .verify(stable.as_bytes(), &signature)
        .is_ok()
}
