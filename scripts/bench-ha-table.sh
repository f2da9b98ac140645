#!/usr/bin/env bash
# bench-ha-table.sh TSV: the Markdown table of docs/BENCHMARKS.md's
# replication section from bench-ha.sh's output: per configuration, the
# median over the trials with the [min, max] spread. Throughput is from the
# unthrottled run, latency from the run at a fixed rate.
set -euo pipefail
awk -F'\t' '
NR == 1 { next }
{
	k = $1 "\t" $2
	if (!(k in seen)) { seen[k] = 1; keys[++n] = k }
	if ($4 == "max") { rps[k] = rps[k] " " $5; mbs[k] = mbs[k] " " $6; cpu[k] = cpu[k] " " $9 }
	else { p50[k] = p50[k] " " $7; p99[k] = p99[k] " " $8 }
}
function stat(list,   a, m, i, j, t) {
	m = split(list, a, " ")
	for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return sprintf("%s [%s, %s]", a[int((m + 1) / 2)], a[1], a[m])
}
END {
	print "| followers | replication | records/s | MB/s | p50 ms | p99 ms | CPU s/GB |"
	print "| --- | --- | --- | --- | --- | --- | --- |"
	for (i = 1; i <= n; i++) {
		k = keys[i]; split(k, f, "\t")
		printf "| %s | %s | %s | %s | %s | %s | %s |\n", f[1], f[2], stat(rps[k]), stat(mbs[k]), stat(p50[k]), stat(p99[k]), stat(cpu[k])
	}
}' "$1"
