#!/usr/bin/env bash
# fill.sh DB - the workload of a RocksDB power-cut trial: Debian's db_bench
# fillrandom with sync=1 (every write synced before db_bench goes on) and
# tiny memtables and levels (64 KiB memtables, 256 KiB files, 1 MiB level
# 1, compaction at 2 level-0 files), so memtable flushes, new SST files,
# MANIFEST edits and compactions (which delete their inputs) happen every
# few hundred milliseconds, until the cut.
set -euo pipefail
db=${1:?usage: fill.sh DB}
exec db_bench --benchmarks=fillrandom --db="$db" --use_existing_db=0 --sync=1 --num=100000000 \
	--value_size=400 --key_size=16 --compression_type=none --write_buffer_size=65536 \
	--max_write_buffer_number=2 --target_file_size_base=262144 --max_bytes_for_level_base=1048576 \
	--level0_file_num_compaction_trigger=2 --max_background_jobs=2 --threads=1 --statistics=0 \
	--stats_interval_seconds=0 --histogram=0
