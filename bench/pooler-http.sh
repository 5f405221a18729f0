#!/usr/bin/env bash
# Direct vs PgBouncer (transaction mode) at HTTP level (docs/scaling.md): the production build
# (dist/, from npm run build) on a database kept by `npm run bench -- --keep-db`, list page 1 and a
# search, 50 connections, 8 s each, direct / through pgbouncer / direct again.
# Usage: bench/pooler-http.sh <kept database name>
set -u
cd "$(dirname "$0")/.."
DB=${1:?usage: bench/pooler-http.sh <kept bench database>}
WS=$(psql -h 127.0.0.1 -U postgres -d "$DB" -Atc "SELECT workspace_id FROM conversations GROUP BY 1 ORDER BY count(*) DESC LIMIT 1")
OWNER=$(psql -h 127.0.0.1 -U postgres -d "$DB" -Atc "SELECT user_id FROM members WHERE workspace_id = '$WS' AND role = 'owner' LIMIT 1")
SECRET=bench-secret-0123456789abcdef0123
TOKEN=$(node --input-type=module -e "import {SignJWT} from 'jose'; console.log(await new SignJWT({name:'B'}).setProtectedHeader({alg:'HS256'}).setSubject('$OWNER').setExpirationTime('2h').sign(new TextEncoder().encode('$SECRET')))")
DIR=$(mktemp -d); chmod 777 $DIR
PGB=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
cat > $DIR/pgb.ini <<INI
[databases]
$DB = host=127.0.0.1 port=5432 dbname=$DB user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGB
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = 10
max_client_conn = 200
ignore_startup_parameters = extra_float_digits
logfile = $DIR/log
INI
if [ "$(id -u)" = 0 ]; then pgbouncer -u postgres $DIR/pgb.ini & PGBPID=$!; else pgbouncer $DIR/pgb.ini & PGBPID=$!; fi
sleep 1
run() { # name url pooler
  PORT=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
  NODE_ENV=production DATABASE_URL=$2 DATABASE_POOLER=$3 REDIS_URL=redis://127.0.0.1:6379 REDIS_PREFIX=h30pc: AUTH_JWT_SECRET=$SECRET VISITOR_SESSION_SECRET=$SECRET MIGRATE_ON_START=false LOG_LEVEL=warn PORT=$PORT HOST=127.0.0.1 JOBS_WORKER=false node dist/src/server.js > $DIR/$1.log 2>&1 & SPID=$!
  for i in $(seq 1 60); do curl -sf http://127.0.0.1:$PORT/health >/dev/null && break; sleep 0.5; done
  for path in "/conversations?limit=20" "/conversations/search?q=refund"; do
    npx autocannon -c 50 -d 3 -H "authorization=Bearer $TOKEN" -H "x-workspace-id=$WS" "http://127.0.0.1:$PORT$path" >/dev/null 2>&1
    R=$(npx autocannon -j -c 50 -d 8 -H "authorization=Bearer $TOKEN" -H "x-workspace-id=$WS" "http://127.0.0.1:$PORT$path" 2>/dev/null | node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{const j=JSON.parse(s);console.log(j.requests.average.toFixed(0)+' req/s p50 '+j.latency.p50+' ms non2xx '+j.non2xx)})")
    echo "$1 $path: $R"
  done
  kill $SPID; wait $SPID 2>/dev/null
}
run direct postgres://postgres@127.0.0.1:5432/$DB none
run pgbouncer postgres://postgres@127.0.0.1:$PGB/$DB transaction
run direct-again postgres://postgres@127.0.0.1:5432/$DB none
kill $PGBPID
rm -rf $DIR
