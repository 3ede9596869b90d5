//! `/applications`: CRUD and key regeneration (SUPPLEMENT §2.2).

use actix_web::{middleware::from_fn, web, HttpRequest, HttpResponse};
use tessera_domain::{ApplicationId, ApplicationInput};

use super::parse_id;
use crate::{
    auth::{self, Caller},
    body::JsonBody,
    problem::ApiError,
    query,
    state::ApiState,
    views::{ApplicationView, PageView},
};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/applications")
            .wrap(from_fn(auth::require_api_key))
            .route(web::post().to(create))
            .route(web::get().to(list)),
    )
    .service(
        web::resource("/applications/{id}")
            .wrap(from_fn(auth::require_api_key))
            .route(web::get().to(get))
            .route(web::put().to(update))
            .route(web::delete().to(delete)),
    )
    .service(
        web::resource("/applications/{id}/regenerate")
            .wrap(from_fn(auth::require_api_key))
            .route(web::post().to(regenerate)),
    );
}

async fn create(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    JsonBody(input): JsonBody<ApplicationInput>,
) -> Result<HttpResponse, ApiError> {
    let issued = state.vault.create_application(&caller, input).await?;
    Ok(HttpResponse::Created().json(ApplicationView::with_key(
        issued.application,
        issued.api_key.expose(),
    )))
}

async fn list(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let page = query::page_only(req.query_string())?;
    let apps = state.vault.list_applications(&caller, page).await?;
    Ok(HttpResponse::Ok().json(PageView::new(apps, ApplicationView::new)))
}

async fn get(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id: ApplicationId = parse_id(&id, "application")?;
    let app = state.vault.get_application(&caller, id).await?;
    Ok(HttpResponse::Ok().json(ApplicationView::new(app)))
}

async fn update(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
    JsonBody(input): JsonBody<ApplicationInput>,
) -> Result<HttpResponse, ApiError> {
    let id: ApplicationId = parse_id(&id, "application")?;
    let app = state.vault.update_application(&caller, id, input).await?;
    Ok(HttpResponse::Ok().json(ApplicationView::new(app)))
}

async fn delete(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id: ApplicationId = parse_id(&id, "application")?;
    state.vault.delete_application(&caller, id).await?;
    Ok(HttpResponse::NoContent().finish())
}

async fn regenerate(
    state: web::Data<ApiState>,
    Caller(caller): Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id: ApplicationId = parse_id(&id, "application")?;
    let issued = state.vault.regenerate_application_key(&caller, id).await?;
    Ok(HttpResponse::Ok().json(ApplicationView::with_key(
        issued.application,
        issued.api_key.expose(),
    )))
}
