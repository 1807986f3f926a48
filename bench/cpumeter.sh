#!/usr/bin/env bash
# Run a command and print the CPU-seconds the whole machine was busy meanwhile, from
# /proc/stat (user, nice, system, irq, softirq, steal), and its wall time.
# `/usr/bin/time` counts only the processes it waits for, which leaves out Chromium's (Playwright's
# driver starts them); on an otherwise idle machine this counts everything a test run costs.
# Usage: bench/cpumeter.sh make test
read -r _ u n s _ _ q sq st _ < /proc/stat
before=$((u + n + s + q + sq + st)); start=$(date +%s.%N)
"$@"; status=$?
read -r _ u n s _ _ q sq st _ < /proc/stat
after=$((u + n + s + q + sq + st)); end=$(date +%s.%N)
echo "SYSTEM busy $(( (after - before) / $(getconf CLK_TCK) )) CPU-s in $(python3 -c "print(round($end - $start, 1))") s wall"
exit $status
