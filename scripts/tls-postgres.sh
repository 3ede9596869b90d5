#!/usr/bin/env bash
# A throw-away PostgreSQL cluster that speaks TLS only, with a CA and a server certificate made
# here, for the `verify-full` run of the PostgreSQL suite (docs/operations.md, "TLS to the
# database"). Debian's cluster tools; run as root.
#
#   scripts/tls-postgres.sh start DIR   # prints the verify-full URL; DIR keeps ca.crt, other-ca.crt
#   scripts/tls-postgres.sh stop
#
# The server certificate names 127.0.0.1 and db.tessera.test only, never `localhost`: a
# verify-full connection to localhost must be refused for its name, a verify-ca one accepted.
set -euo pipefail

PORT="${TESSERA_TLS_PG_PORT:-5433}"
NAME=tessera_tls
VERSION="$(ls /etc/postgresql | sort -n | tail -n1)"

case "${1:-}" in
  start)
    DIR="${2:?the directory for the certificates}"
    mkdir -p "$DIR"
    cd "$DIR"
    # The CA, a second CA that signed nothing of the server's, and the server's certificate.
    for ca in ca other-ca; do
      openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=Tessera CI $ca" \
        -keyout "$ca.key" -out "$ca.crt" 2>/dev/null
    done
    openssl req -newkey rsa:2048 -nodes -subj "/CN=db.tessera.test" \
      -keyout server.key -out server.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:db.tessera.test\nbasicConstraints=CA:FALSE\n' > san.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
      -extfile san.ext -out server.crt 2>/dev/null

    pg_dropcluster --stop "$VERSION" "$NAME" 2>/dev/null || true
    pg_createcluster "$VERSION" "$NAME" -p "$PORT" >/dev/null
    CONF="/etc/postgresql/$VERSION/$NAME"
    install -o postgres -g postgres -m 0600 server.key "$CONF/server.key"
    install -o postgres -g postgres -m 0644 server.crt "$CONF/server.crt"
    cat >> "$CONF/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
ssl = on
ssl_cert_file = '$CONF/server.crt'
ssl_key_file = '$CONF/server.key'
CONF
    # TLS only over TCP: a connection without it finds no entry and is refused.
    cat > "$CONF/pg_hba.conf" <<HBA
local   all all            trust
hostssl all all 127.0.0.1/32 trust
HBA
    pg_ctlcluster "$VERSION" "$NAME" start
    echo "postgres://postgres@127.0.0.1:$PORT/postgres?sslmode=verify-full&sslrootcert=$DIR/ca.crt"
    ;;
  stop)
    pg_dropcluster --stop "$VERSION" "$NAME"
    ;;
  *)
    echo "usage: $0 start DIR | stop" >&2
    exit 2
    ;;
esac
