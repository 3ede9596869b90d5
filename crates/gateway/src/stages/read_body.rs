//! `read_body`: the request body, read only now that the caller is known (an unknown proxy
//! key or API key never costs a body read), at most `--max-body-bytes` (413, also when
//! `Content-Length` announces more) and within `--body-timeout` of the start of the request
//! (408: a body sent one byte a second cannot hold the connection).

use bytes::Bytes;
use http::header;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use tessera_service::mount::LocalBody;

use super::Halt;
use crate::{
    context::RequestContext,
    error::{ErrorKind, GatewayError},
    shared::Shared,
};

pub(crate) async fn read_body(
    gw: &Shared,
    ctx: &mut RequestContext<'_>,
    body: LocalBody,
) -> Result<Bytes, Halt> {
    let limit = gw.config.max_body_bytes;
    let announced = ctx
        .parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > limit as u64) {
        return Err(too_large(limit).into());
    }
    let deadline = tokio::time::Instant::from_std(ctx.started) + gw.config.body_timeout;
    match tokio::time::timeout_at(deadline, Limited::new(body, limit).collect()).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => {
            Err(too_large(limit).into())
        }
        Ok(Err(e)) => Err(GatewayError::new(
            ErrorKind::BadRequest,
            "the request body could not be read",
        )
        .with_source(e)
        .into()),
        Err(_) => Err(GatewayError::new(
            ErrorKind::BodyTimeout,
            format!(
                "the request body did not arrive within {} s",
                gw.config.body_timeout.as_secs_f64()
            ),
        )
        .into()),
    }
}

fn too_large(limit: usize) -> GatewayError {
    GatewayError::new(
        ErrorKind::TooLarge,
        format!("the request body exceeds the limit of {limit} bytes"),
    )
}
