//! Logging set-up: human-readable by default, JSON lines with `--log-format json`; level from
//! `RUST_LOG` (default `info`). Logs go to stderr so stdout carries only command output. Text
//! lines are coloured only on a terminal (never in a file, a pipe or the journal) and never
//! when `NO_COLOR` is set.
//!
//! What actix-web's HTTP/1 layer logs about a connection (a request that does not parse, a
//! client that resets) is caused by whoever connects, and actix logs it at ERROR, once per
//! connection: anyone could flood the log with garbage. Such lines are written at WARN
//! instead, at most one a second per process, each with the number left out before it
//! ([`PeerErrors`]).

use clap::ValueEnum;
use std::{
    sync::{Mutex, PoisonError},
    time::{Duration, Instant},
};

use tracing::{
    field::{Field, Visit},
    span, Event, Level, Metadata, Subscriber,
};
use tracing_core::{
    callsite::Callsite, field::FieldSet, identify_callsite, metadata::Kind, subscriber::Interest,
    Dispatch, LevelFilter,
};
use tracing_subscriber::{
    layer::{Context, SubscriberExt},
    util::SubscriberInitExt,
    EnvFilter, Layer,
};

/// Log line format.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Installs the global subscriber (once).
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(colour(std::io::IsTerminal::is_terminal(&std::io::stderr())));
    let fmt = match format {
        LogFormat::Text => fmt.boxed(),
        LogFormat::Json => fmt.json().flatten_event(true).boxed(),
    };
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(PeerErrors::new(fmt))
        .try_init();
}

/// Whether text lines are coloured: on a terminal, unless `NO_COLOR` is set (no-color.org).
fn colour(terminal: bool) -> bool {
    terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Where actix-web logs what goes wrong on an HTTP/1 connection.
const PEER_TARGET: &str = "actix_http::h1";

/// How often a connection failure is logged, at most.
const PEER_EVERY: Duration = Duration::from_secs(1);

/// The message of the line that stands for actix's (its text is in `error`).
const PEER_MESSAGE: &str = "an HTTP connection failed (a malformed request, or a client that went away); at most one such line a second, with the number left out before it";

/// At most one line per period; counts those left out.
#[derive(Debug)]
struct LogRate {
    every: Duration,
    state: Mutex<RateState>,
}

#[derive(Debug, Default)]
struct RateState {
    last: Option<Instant>,
    suppressed: u64,
}

impl LogRate {
    fn new(every: Duration) -> Self {
        Self {
            every,
            state: Mutex::new(RateState::default()),
        }
    }

    /// Whether a line may be written at `now`: if so, how many were left out since the last.
    fn admit(&self, now: Instant) -> Option<u64> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        match state.last {
            Some(last) if now.saturating_duration_since(last) < self.every => {
                state.suppressed += 1;
                None
            }
            _ => {
                state.last = Some(now);
                Some(std::mem::take(&mut state.suppressed))
            }
        }
    }
}

/// The callsite of the line that stands for actix's.
struct PeerCallsite;

static PEER_CALLSITE: PeerCallsite = PeerCallsite;

static PEER_METADATA: Metadata<'static> = Metadata::new(
    "connection failed",
    module_path!(),
    Level::WARN,
    Some(file!()),
    Some(line!()),
    Some(module_path!()),
    FieldSet::new(
        &["message", "error", "suppressed"],
        identify_callsite!(&PEER_CALLSITE),
    ),
    Kind::EVENT,
);

impl Callsite for PeerCallsite {
    fn set_interest(&self, _: Interest) {}

    fn metadata(&self) -> &Metadata<'_> {
        &PEER_METADATA
    }
}

/// The text of an event's `message` field.
#[derive(Default)]
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

/// Wraps the layer that writes the log (`inner`): actix's ERROR and WARN events about HTTP/1
/// connections reach it as one WARN line a second at most; everything else as it is.
///
/// The line is made here and handed to `inner` directly, not emitted as a new event: an event
/// emitted while the subscriber handles another would be dropped where a scoped subscriber is
/// set.
struct PeerErrors<L> {
    inner: L,
    rate: LogRate,
}

impl<L> PeerErrors<L> {
    fn new(inner: L) -> Self {
        Self {
            inner,
            rate: LogRate::new(PEER_EVERY),
        }
    }

    fn from_peer(metadata: &Metadata<'_>) -> bool {
        metadata.target().starts_with(PEER_TARGET) && *metadata.level() <= Level::WARN
    }

    /// Hands `inner` the line standing for actix's `event`, if one is due and WARN is on.
    fn demote<S: Subscriber>(&self, event: &Event<'_>, ctx: Context<'_, S>)
    where
        L: Layer<S>,
    {
        if !ctx.enabled(&PEER_METADATA) {
            return;
        }
        let Some(suppressed) = self.rate.admit(Instant::now()) else {
            return;
        };
        let mut error = Message::default();
        event.record(&mut error);
        let fields = PEER_METADATA.fields();
        let (Some(message_field), Some(error_field), Some(suppressed_field)) = (
            fields.field("message"),
            fields.field("error"),
            fields.field("suppressed"),
        ) else {
            return;
        };
        let values: [(&Field, Option<&dyn tracing::Value>); 3] = [
            (&message_field, Some(&PEER_MESSAGE)),
            (&error_field, Some(&error.0)),
            (&suppressed_field, Some(&suppressed)),
        ];
        let values = fields.value_set(&values);
        self.inner
            .on_event(&Event::new(&PEER_METADATA, &values), ctx);
    }
}

impl<S: Subscriber, L: Layer<S>> Layer<S> for PeerErrors<L> {
    fn on_register_dispatch(&self, subscriber: &Dispatch) {
        self.inner.on_register_dispatch(subscriber);
    }

    fn on_layer(&mut self, subscriber: &mut S) {
        self.inner.on_layer(subscriber);
    }

    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        self.inner.register_callsite(metadata)
    }

    fn enabled(&self, metadata: &Metadata<'_>, ctx: Context<'_, S>) -> bool {
        self.inner.enabled(metadata, ctx)
    }

    fn on_new_span(&self, attrs: &span::Attributes<'_>, id: &span::Id, ctx: Context<'_, S>) {
        self.inner.on_new_span(attrs, id, ctx);
    }

    fn on_record(&self, span: &span::Id, values: &span::Record<'_>, ctx: Context<'_, S>) {
        self.inner.on_record(span, values, ctx);
    }

    fn on_follows_from(&self, span: &span::Id, follows: &span::Id, ctx: Context<'_, S>) {
        self.inner.on_follows_from(span, follows, ctx);
    }

    fn event_enabled(&self, event: &Event<'_>, ctx: Context<'_, S>) -> bool {
        self.inner.event_enabled(event, ctx)
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        if Self::from_peer(event.metadata()) {
            self.demote(event, ctx);
        } else {
            self.inner.on_event(event, ctx);
        }
    }

    fn on_enter(&self, id: &span::Id, ctx: Context<'_, S>) {
        self.inner.on_enter(id, ctx);
    }

    fn on_exit(&self, id: &span::Id, ctx: Context<'_, S>) {
        self.inner.on_exit(id, ctx);
    }

    fn on_close(&self, id: span::Id, ctx: Context<'_, S>) {
        self.inner.on_close(id, ctx);
    }

    fn on_id_change(&self, old: &span::Id, new: &span::Id, ctx: Context<'_, S>) {
        self.inner.on_id_change(old, new, ctx);
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        self.inner.max_level_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::fmt::MakeWriter;

    use super::*;

    #[test]
    fn one_line_a_period_with_the_number_left_out() {
        let rate = LogRate::new(Duration::from_secs(1));
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        assert_eq!(rate.admit(at(0)), Some(0));
        assert_eq!(rate.admit(at(10)), None);
        assert_eq!(rate.admit(at(999)), None);
        assert_eq!(rate.admit(at(1000)), Some(2));
        assert_eq!(rate.admit(at(1500)), None);
        assert_eq!(rate.admit(at(5000)), Some(1));
        assert_eq!(rate.admit(at(6000)), Some(0));
    }

    /// Collects what the log layer writes.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Self;

        fn make_writer(&'a self) -> Self {
            self.clone()
        }
    }

    /// The JSON lines written while `f` runs under a subscriber set up as `init` sets it up,
    /// with `directives` for `RUST_LOG`.
    fn logged(directives: &str, f: impl FnOnce()) -> Vec<serde_json::Value> {
        let out = Captured::default();
        let fmt = tracing_subscriber::fmt::layer()
            .with_writer(out.clone())
            .json()
            .flatten_event(true);
        let subscriber = tracing_subscriber::registry()
            .with(EnvFilter::new(directives))
            .with(PeerErrors::new(fmt));
        tracing::subscriber::with_default(subscriber, f);
        let text = String::from_utf8(out.0.lock().expect("lock").clone()).expect("utf-8");
        text.lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }

    fn garbage() {
        tracing::error!(
            target: "actix_http::h1::dispatcher",
            "stream error: {}",
            "Parse error: invalid Token"
        );
    }

    #[test]
    fn actix_connection_errors_become_one_rate_limited_warning() {
        let lines = logged("info", || {
            for _ in 0..100 {
                garbage();
            }
            tracing::error!(target: "tessera_http", "a real error");
        });
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[0]["level"], "WARN");
        assert_eq!(
            lines[0]["error"],
            "stream error: Parse error: invalid Token"
        );
        assert_eq!(lines[0]["suppressed"], 0);
        assert_eq!(lines[0]["target"], "tessera_startup::telemetry");
        assert!(
            lines[0]["message"]
                .as_str()
                .is_some_and(|m| m.contains("malformed request")),
            "{lines:?}"
        );
        assert_eq!(lines[1]["level"], "ERROR", "other errors are untouched");
        assert_eq!(lines[1]["message"], "a real error");
    }

    #[test]
    fn the_filter_still_decides() {
        assert!(logged("error", garbage).is_empty(), "WARN is off");
        assert!(logged("actix_http=off,info", garbage).is_empty());
        // actix's lower levels pass as they are when asked for.
        let lines = logged("actix_http=trace", || {
            tracing::trace!(target: "actix_http::h1::dispatcher", "start flags");
        });
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0]["level"], "TRACE");
    }
}
