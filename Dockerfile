# Multi-stage image with both binaries (api, proxy-gateway), running as a non-root user.
# NOTE: this recipe could not be built on the development machines (no Docker engine there);
# it is kept deliberately plain so it builds with any recent Docker/BuildKit.
#
#   docker build -t tessera .
#   docker run -e TESSERA_MASTER_KEY=... -e TESSERA_DATABASE_URL=postgres://... \
#     -p 8080:8080 tessera api serve --listen 0.0.0.0:8080
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin api --bin proxy-gateway

FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --home-dir /var/lib/tessera --create-home tessera
COPY --from=build /src/target/release/api /src/target/release/proxy-gateway /usr/local/bin/
USER 10001
WORKDIR /var/lib/tessera
ENV TESSERA_DATA_DIR=/var/lib/tessera
EXPOSE 8080 8081
ENTRYPOINT []
CMD ["api", "serve", "--listen", "0.0.0.0:8080"]
