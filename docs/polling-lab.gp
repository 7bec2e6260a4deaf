# docs/polling-lab.gp - tools/polling-lab's table as a PNG: round-trip latency and CPU per
# message against the message size, one line per --poll mode.
#   gnuplot -e "datafile='polling-lab.csv'; outfile='polling-lab.png'; subtitle='...'" docs/polling-lab.gp
# datafile: polling-lab.csv (mode,size,runs,median_us,p99_us,client,server,kernel,softirq,busy,wall).
if (!exists("datafile")) datafile = 'polling-lab.csv'
if (!exists("outfile")) outfile = 'polling-lab.png'
if (!exists("subtitle")) subtitle = ''

set terminal pngcairo size 1200,480 font 'DejaVu Sans,10'
set output outfile
set datafile separator ','
set key autotitle columnhead

modes = "busy event adaptive"
set logscale x 2
set format x '%g'
set xlabel 'message payload (bytes)'
set grid
set key top left
set multiplot layout 1,2 title "rdma-examples 01: waiting for completions, --poll busy / event / adaptive\n" . subtitle

set title 'round-trip latency: median (solid), p99 (dashed)'
set ylabel 'us'
set logscale y 10
plot for [i = 1:words(modes)] datafile using (strcol(1) eq word(modes, i) ? $2 : 1/0):4 \
	with linespoints lw 2 pt 7 lc i title word(modes, i) . ' median', \
     for [i = 1:words(modes)] datafile using (strcol(1) eq word(modes, i) ? $2 : 1/0):5 \
	with linespoints lw 1 dt 2 pt 6 lc i title word(modes, i) . ' p99'

set title 'CPU per message: both processes (solid), machine kernel time (dashed)'
set ylabel 'us of CPU per round trip'
plot for [i = 1:words(modes)] datafile using (strcol(1) eq word(modes, i) ? $2 : 1/0):($6 + $7) \
	with linespoints lw 2 pt 7 lc i title word(modes, i) . ' client+server', \
     for [i = 1:words(modes)] datafile using (strcol(1) eq word(modes, i) ? $2 : 1/0):8 \
	with linespoints lw 1 dt 2 pt 6 lc i title word(modes, i) . ' kernel'

unset multiplot
