#!/usr/bin/env bash
# claim_units_pgbench.sh: what PostgreSQL alone spends on accel's one-statement claim (the CTE of
# fleet_store.cc: bump the host's generation, insert the claim row and one claim_units row per
# CPU and device), with claim_units as schema 3 had it (a foreign key to claims and an index on
# claim_id), without the foreign key, and as schema 4 has it (neither). pgbench runs the claim
# against a private server (initdb in a temp dir, unix socket, fsync on; never the system
# cluster) with 16 clients; each transaction claims a fresh host with a real 4-GPU, 2-cell
# placement (fuzz/corpus/placement_json/hgx-h100-gpu-4-2cell.json: 32 CPUs + 4 GPUs = 36 units).
# Prints per variant: transactions per second and the server's CPU per claim (its processes'
# utime + stime from /proc, reaped backends included). docs/benchmarks.md, "Schema 4".
#
#   bench/claim_units_pgbench.sh [SECONDS per run, default 8] [ROUNDS, default 2]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-8}
rounds=${2:-2}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/pgbench" ] || { echo "claim_units_pgbench: no PostgreSQL server programs (apt-get install postgresql)" >&2; exit 2; }
dir=$(mktemp -d /tmp/accel-pgbench-XXXXXX)
as=()
if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; as=(runuser -u postgres --); fi
cleanup() { "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT
"${as[@]}" "$bin/initdb" -D "$dir/data" -A trust -U postgres --no-locale -E UTF8 >/dev/null
printf "listen_addresses = ''\nunix_socket_directories = '%s'\nfsync = on\nshared_buffers = '256MB'\nmax_connections = 100\n" \
  "$dir" >>"$dir/data/postgresql.conf"
"${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
psql() { "${as[@]}" "$bin/psql" -h "$dir" -U postgres -XAtq -v ON_ERROR_STOP=1 "$@"; }

# The placement and its units (UnitsOf: consumed CPUs, emulator CPUs, device addresses).
placement=fuzz/corpus/placement_json/hgx-h100-gpu-4-2cell.json
units=$(python3 - "$placement" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
def cpus(s):
    out = set()
    for part in filter(None, s.split(",")):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out
c = cpus(p.get("emulator_consumed_cpus", ""))
for cell in p["cells"]:
    c |= cpus(cell["consumed_cpus"])
units = ["cpu:%d" % n for n in sorted(c)] + ["pci:" + d["address"] for d in p["devices"]]
print("{" + ",".join('"%s"' % u for u in units) + "}")
EOF
)
body=$(sed "s/'/''/g" "$placement")

schema() {  # $1: the claim_units columns' tail; $2: extra DDL
  cat <<EOF
SET client_min_messages = warning;
DROP TABLE IF EXISTS claim_units, claims, hosts, pl CASCADE; DROP SEQUENCE IF EXISTS hs;
CREATE SEQUENCE hs;
CREATE TABLE hosts(name TEXT PRIMARY KEY, topology_id TEXT NOT NULL, policy TEXT NOT NULL, labels TEXT NOT NULL,
  state TEXT NOT NULL, generation BIGINT NOT NULL DEFAULT 0, heartbeat_at BIGINT, stale_after_s BIGINT NOT NULL DEFAULT 0,
  updated_at TEXT NOT NULL, change_number BIGINT NOT NULL DEFAULT 0);
CREATE INDEX hosts_by_change ON hosts(change_number);
CREATE TABLE claims(id TEXT PRIMARY KEY, host TEXT NOT NULL, flavor TEXT NOT NULL, created_at TEXT NOT NULL,
  placement TEXT NOT NULL, created_us BIGINT NOT NULL DEFAULT 0);
CREATE INDEX claims_by_host ON claims(host);
CREATE TABLE claim_units(host TEXT NOT NULL, unit TEXT NOT NULL, claim_id TEXT NOT NULL $1, PRIMARY KEY (host, unit));
$2
INSERT INTO hosts(name, topology_id, policy, labels, state, updated_at)
  SELECT 'h' || g, repeat('a', 64), '{"cpu_dedicated_set": "4-111"}', '{"az": "rack-1"}', 'enabled', '2026-12-02T00:00:00Z'
  FROM generate_series(1, 200000) g;
CREATE TABLE pl(body TEXT, units TEXT[]);
INSERT INTO pl VALUES ('$body', '$units');
VACUUM ANALYZE hosts;
EOF
}
# The claim of fleet_store.cc's kClaimStatementPostgres, on the next fresh host.
cat >"$dir/claim.sql" <<'EOF'
\set r random(1, 1000000000)
WITH h AS (SELECT 'h' || nextval('hs') AS name),
bumped AS (UPDATE hosts SET generation = generation + 1, change_number = pg_current_xact_id()::text::bigint
  WHERE name = (SELECT name FROM h) AND state = 'enabled' RETURNING name),
claim AS (INSERT INTO claims(id, host, flavor, created_at, placement, created_us)
  SELECT 'c-' || :r || '-' || name, name, 'gpu-4-2cell', '2026-12-02T00:00:00Z', (SELECT body FROM pl), 1 FROM bumped
  RETURNING id, host),
units AS (INSERT INTO claim_units(host, unit, claim_id) SELECT host, u, id FROM claim, unnest((SELECT units FROM pl)) AS u
  RETURNING 1)
SELECT (SELECT count(*) FROM claim), (SELECT count(*) FROM units);
EOF
chmod 644 "$dir/claim.sql"

server_cpu_ticks() {  # every server process's utime + stime, plus the postmaster's reaped children
  local pm total=0 f
  pm=$(head -1 "$dir/data/postmaster.pid")
  for p in $(pgrep -P "$pm") "$pm"; do
    read -r -a f < <(sed 's/.*) //' "/proc/$p/stat")
    total=$((total + f[11] + f[12]))
    [ "$p" = "$pm" ] && total=$((total + f[13] + f[14]))
  done
  echo "$total"
}

echo "claim_units_pgbench: PostgreSQL $("$bin/postgres" --version | awk '{print $3}'), 16 clients, ${seconds} s per run, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
for round in $(seq 1 "$rounds"); do
  for variant in schema3 no-foreign-key schema4; do
    case $variant in
      schema3) schema "REFERENCES claims(id) ON DELETE CASCADE" "CREATE INDEX claim_units_by_claim ON claim_units(claim_id);" ;;
      no-foreign-key) schema "" "CREATE INDEX claim_units_by_claim ON claim_units(claim_id);" ;;
      schema4) schema "" "" ;;
    esac | psql -d postgres >/dev/null
    before=$(server_cpu_ticks)
    out=$("${as[@]}" "$bin/pgbench" -h "$dir" -U postgres -n -M prepared -c 16 -j 2 -T "$seconds" -f "$dir/claim.sql" postgres 2>&1)
    sleep 0.5  # let the postmaster reap the backends
    after=$(server_cpu_ticks)
    n=$(echo "$out" | awk '/number of transactions actually processed/ {split($NF, a, "/"); print a[1]}')
    failed=$(echo "$out" | awk '/number of failed transactions/ {print $5}')
    tps=$(echo "$out" | awk '/^tps/ {print $3; exit}')
    awk -v v="$variant" -v r="$round" -v n="$n" -v tps="$tps" -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v f="${failed:-0}" \
      'BEGIN { printf "round %d  %-15s %7d claims  %7.0f claims/s  server CPU %.3f ms per claim  failed %s\n", r, v, n, tps, 1000 * t / hz / n, f }'
  done
done
