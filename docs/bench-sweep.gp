# docs/bench-sweep.gp - the chunk x depth sweep of 03 (tools/bench), as a PNG.
#   gnuplot -e "datafile='bench-sweep.dat'; outfile='bench-sweep.png'; subtitle='...'" docs/bench-sweep.gp
# datafile: one line per run, "op chunk_bytes depth MiB/s", op put or get, sorted by op,
# depth, chunk (tools/bench writes it so).
if (!exists("datafile")) datafile = 'bench-sweep.dat'
if (!exists("outfile")) outfile = 'bench-sweep.png'
if (!exists("subtitle")) subtitle = ''

set terminal pngcairo size 1100,480 font 'DejaVu Sans,10'
set output outfile
set datafile separator whitespace

# The depths in the data, in order, as a word list for the plot loops.
depths = system("awk '{ print $3 }' '" . datafile . "' | sort -n | uniq | tr '\\n' ' '")
maxy = real(system("awk 'BEGIN { m = 1 } $4 > m { m = $4 } END { print m }' '" . datafile . "'"))

set logscale x 2
set format x '%g'
set xlabel 'chunk (KiB)'
set ylabel 'MiB/s (a file from tmpfs to tmpfs)'
set yrange [0:maxy * 1.15]
set grid
set key top left title 'depth'
set multiplot layout 1,2 title "rdma-examples 03: file transfer throughput by chunk size and depth\n" . subtitle

set title 'put (RDMA WRITE with immediate)'
plot for [d in depths] datafile using (strcol(1) eq 'put' && $3 == d + 0 ? $2 / 1024 : 1/0):4 \
	with linespoints lw 2 pt 7 title d

set title 'get (RDMA READ)'
plot for [d in depths] datafile using (strcol(1) eq 'get' && $3 == d + 0 ? $2 / 1024 : 1/0):4 \
	with linespoints lw 2 pt 7 title d

unset multiplot
