# Client-pattern matrix (label "patterns", plus "mp"): bench/ptl_patterns.c in
# --check mode, one pattern per test, each registered as mp_pat_<name>_offload
# and mp_pat_<name>_host and run as
#   mp_driver --no-residue -- ptlrun -n N [--host-matching] -- mp_patterns --check ...
# It must print "ptl_patterns: OK"; a hang ends through its watchdog (exit 3,
# one wait > 5 s) long before the CTest timeout. The ranks record their
# engines (PTL_TRACE=1) and the watchdog asks ptlrun for a dump of the job
# (SIGUSR1) before it exits, so a rare hang in CI arrives in the test log
# with its explanation (tests/trace/trace_dump.sh watchdog checks that).
#
# The source is built here as mp_patterns (not the bench target ptl_patterns),
# so the matrix exists when PTL_BUILD_BENCH is OFF (the ASan/TSan stages).
#
# Selection rule (a covering subset, not the cross-product; every value of
# every dimension appears at least once):
#   wait      every wait mode x start on/off, put ping-pong, 8 B, with the full
#             event set (send-end on, ack on)                       12 tests
#   events    send-end x ack x start at the ordinary client's wait (eqwait),
#             put 8 B (the on/on/* pair is in "wait")                 6 tests
#   ops       get and getput x recv persistent/fresh x region off/on, start on,
#             eqwait; and each at start off with eqpoll-multi        10 tests
#   sizes     put at 0, 4032 (eager limit), 4033, 64 KiB, 1 MiB, each with
#             region on (bound 16 MiB source MD, SEND_END to its EQ,
#             PtlPutRegion: the client that hung) x recv persistent/fresh;
#             get at 0, 4033, 64 KiB, 1 MiB; getput at 0 and 64      16 tests
#   stream    put/get/getput at 8 B (eqwait, start on), put at 4033 fresh and
#             64 KiB (eqpoll-multi), get at 64 KiB (several CMA gets
#             outstanding on one target MD)                           6 tests
#   threads   2 threads: put eqwait, put eqpoll-multi, get eqpoll, put
#             stream 4033 fresh                                       4 tests
#   ranks     4 ranks (pairs (0,1), (2,3)): put eqwait, stream eqpoll-multi,
#             get fresh eqpoll-timeout, 2 threads put eqwait           4 tests
#   think     --think (a pause before each own operation, so waiters and NIC
#             threads sleep and are woken): eqwait sleep 1.5 ms, eqwait-split
#             with the 16 MiB region, 2 threads spinning 200 us, get stream
#             fresh                                                    4 tests
#   coop      puts of 256 KiB and 1 MiB (the cooperative rendezvous): start off
#             with eqpoll, 2 threads, a window of 4 with ACKs, think spin
#             and think sleep                                          5 tests
#   order     causal order per peer (issue 12 item 16), window 16 with ACKs:
#             put 64 KiB (CMA, copy mode, 4 queue slots), 256 KiB, 8 B; get
#             64 KiB, with 1,000-5,000 windows                         6 tests
#   lanefill  a window of 64 puts of 100 B (192 fast-box lines, the lane
#             has 128): every wait mode with START on, fresh, 2 threads,
#             1,000 windows                                            9 tests
# 82 patterns x 2 modes (these sections; more below); check runs of 200 iterations (50-100 at 1 MiB, with
# threads or --think; more for "order"), 0.05-2 s each: about 2 min for both
# modes on 2 cores (1 min with ctest -j2).

set(PTL_PATTERNS_TIMEOUT 60 CACHE STRING "Per-test CTest timeout of the pattern matrix (seconds)")

add_executable(mp_patterns ${PROJECT_SOURCE_DIR}/bench/ptl_patterns.c
                           ${PROJECT_SOURCE_DIR}/bench/bench_util.c)
target_include_directories(mp_patterns PRIVATE ${PROJECT_SOURCE_DIR}/bench)
target_link_libraries(mp_patterns PRIVATE portals m Threads::Threads)

# ptl_pattern(<name> [NP n] [LIMIT s] ARGS a... [ENV VAR=v...]): mp_pat_<name>_offload
# and _host. LIMIT: the job's time limit (default 45 s; the long "order" runs take more
# under ASan on a loaded machine). A hang is caught sooner anyway: --check's watchdog
# fails a single wait longer than 5 s.
function(ptl_pattern name)
  # SUFFIX goes after the name (mp_pat_<name><SUFFIX>_<mode>); LABELS are added
  # to "mp;patterns" (ptl_pattern_ofi below)
  # LOADED: the job runs beside two CPU-bound processes (bench/beside-load 2), alone
  # (RUN_SERIAL: the loops take both cores whatever the test run's -j is)
  cmake_parse_arguments(T "LOADED" "NP;LIMIT;SUFFIX" "ARGS;ENV;LABELS" ${ARGN})
  if(NOT T_NP)
    set(T_NP 2)
  endif()
  if(NOT T_LIMIT)
    set(T_LIMIT 45)
  endif()
  math(EXPR t_within "${T_LIMIT} + 5")
  math(EXPR t_ctest "${T_LIMIT} + 15")
  if(t_ctest LESS PTL_PATTERNS_TIMEOUT)
    set(t_ctest ${PTL_PATTERNS_TIMEOUT})
  endif()
  foreach(mode offload host)
    if(mode STREQUAL "offload")
      set(hm "")
      set(env PTL_OFFLOAD=1 PTL_TRACE=1 ${T_ENV})
    else()
      set(hm --host-matching)
      set(env PTL_OFFLOAD=0 PTL_TRACE=1 ${T_ENV})
    endif()
    set(labels mp patterns ${T_LABELS})
    set(load "")
    if(T_LOADED)
      set(load ${PROJECT_SOURCE_DIR}/bench/beside-load 2)
    endif()
    add_test(NAME mp_pat_${name}${T_SUFFIX}_${mode}
      COMMAND ${load} ${MP_DRV} --no-residue --within ${t_within} --stdout-has "ptl_patterns: OK" --
              ${MP_RUN} -n ${T_NP} ${hm} --timeout ${T_LIMIT} --
              $<TARGET_FILE:mp_patterns> --check ${T_ARGS})
    set_tests_properties(mp_pat_${name}${T_SUFFIX}_${mode} PROPERTIES
      ENVIRONMENT "${env}"
      TIMEOUT ${t_ctest}
      LABELS "${labels}")
    if(T_LOADED)
      set_tests_properties(mp_pat_${name}${T_SUFFIX}_${mode} PROPERTIES RUN_SERIAL TRUE)
    endif()
  endforeach()
endfunction()

# ---- wait: every wait mode x START on/off (put ping-pong, 8 B, every event) ------
foreach(w eqwait eqpoll eqpoll-timeout eqpoll-multi eqget-spin eqwait-split)
  foreach(s on off)
    ptl_pattern(wait_${w}_start${s} ARGS --wait ${w} --start ${s} --send-end on --ack on)
  endforeach()
endforeach()

# ---- events: send-end x ack x start at PtlEQWait ------------------------------------
foreach(s on off)
  foreach(e on off)
    foreach(a on off)
      if(e STREQUAL "on" AND a STREQUAL "on")
        continue() # in "wait" above
      endif()
      ptl_pattern(ev_start${s}_send${e}_ack${a} ARGS --wait eqwait --start ${s} --send-end ${e} --ack ${a})
    endforeach()
  endforeach()
endforeach()

# ---- ops: get, getput x recv x region ---------------------------------------------
foreach(op get getput)
  foreach(rv persistent fresh)
    foreach(rg on off)
      ptl_pattern(op_${op}_${rv}_region${rg} ARGS --op ${op} --recv ${rv} --region ${rg} --size 8)
    endforeach()
  endforeach()
  ptl_pattern(op_${op}_startoff_multi ARGS --op ${op} --start off --wait eqpoll-multi --size 8)
endforeach()

# ---- sizes --------------------------------------------------------------------------
foreach(sz 0 4032 4033 65536 1048576)
  if(sz EQUAL 1048576)
    set(n -n 50)
  else()
    set(n "")
  endif()
  foreach(rv persistent fresh)
    ptl_pattern(size_put_${sz}_${rv} ARGS --size ${sz} --region on --recv ${rv} ${n})
  endforeach()
endforeach()
ptl_pattern(size_get_0 ARGS --op get --size 0)
ptl_pattern(size_get_4033 ARGS --op get --size 4033 --recv fresh)
ptl_pattern(size_get_65536 ARGS --op get --size 65536 --region on)
ptl_pattern(size_get_1048576 ARGS --op get --size 1048576 --region on --recv fresh -n 50)
ptl_pattern(size_getput_0 ARGS --op getput --size 0)
ptl_pattern(size_getput_64 ARGS --op getput --size 64 --region on --recv fresh)

# ---- stream (window 8, one answer per window) ----------------------------------------
foreach(op put get getput)
  ptl_pattern(stream_${op}_8 ARGS --shape stream --op ${op} --size 8)
endforeach()
ptl_pattern(stream_put_4033_fresh ARGS --shape stream --size 4033 --recv fresh --ack on)
ptl_pattern(stream_put_65536 ARGS --shape stream --size 65536 --region on --wait eqpoll-multi -n 50)
ptl_pattern(stream_get_65536 ARGS --shape stream --op get --size 65536 --wait eqpoll-multi -n 50)

# ---- a window that fills the fast-box lane (sixty-third session) -------------------
# 64 puts of 100 B: each takes 3 of the lane's 128 lines (changed header words and
# payload), so a window is 192 lines and the lane fills mid-window whenever the
# receiver lags 43 messages; the rest of the window goes through the ring, then the
# lane again, in order (xport.h, "Order"). A counting build found 3-34% of the
# sends facing a full lane in each of these, in both modes on 2 cores (with ACKs
# none: the sender, taking an ACK per put, no longer outruns the receiver; the
# "order" patterns below have ACKs). Every wait mode with START on; a fresh ME per
# message; two threads; the causal-order rule (SEND_END before the answer's
# events) over 1,000 windows.
foreach(w eqwait eqpoll eqpoll-timeout eqpoll-multi eqget-spin eqwait-split)
  ptl_pattern(lanefill_${w} ARGS --shape stream --window 64 --size 100 --start on --wait ${w})
endforeach()
ptl_pattern(lanefill_fresh ARGS --shape stream --window 64 --size 100 --start on --recv fresh -n 100)
ptl_pattern(lanefill_threads2 ARGS --shape stream --window 64 --size 100 --start on --threads 2
            --wait eqpoll-multi -n 100)
ptl_pattern(lanefill_order LIMIT 150 ARGS --shape stream --window 64 --size 100 --start on -n 1000)

# ---- causal order per peer (issue 12 item 16): window 16, the answer after the window --
# A must read SEND_END and ACK of all 16 puts before the answer's PUT_START, B the
# answer's ACK before the next window (one EQ: --check's causal-order rule). 64 KiB
# (CMA pull; copy through the queues with PTL_RNDV_MODE=2; 4 queue slots), 256 KiB,
# and 8 B (eager ACKs); more iterations than the matrix: the old order broke about once
# in 1,000-4,000 windows in offload mode.
ptl_pattern(order_stream_put_65536_w16 LIMIT 150 ARGS --shape stream --window 16 --size 65536 --ack on -n 3000)
ptl_pattern(order_stream_put_262144_w16 LIMIT 150 ARGS --shape stream --window 16 --size 262144 --ack on -n 1000)
# (the copy variant: 500 windows, 8 MB through the queues each; 1,500 took 42 s a mode)
ptl_pattern(order_stream_put_65536_w16_copy LIMIT 150 ARGS --shape stream --window 16 --size 65536 --ack on -n 500
            ENV PTL_RNDV_MODE=2)
# 4 queue slots: FINs wait for credits; PUT_END must wait with them (engine/target.c)
ptl_pattern(order_stream_put_65536_w16_q4 LIMIT 150 ARGS --shape stream --window 16 --size 65536 --ack on -n 1000
            ENV PTL_QUEUE_SLOTS=4)
ptl_pattern(order_stream_put_8_w16 LIMIT 150 ARGS --shape stream --window 16 --size 8 --ack on -n 5000)
ptl_pattern(order_stream_get_65536_w16 LIMIT 150 ARGS --shape stream --window 16 --op get --size 65536 -n 1000)

# ---- 2 application threads per rank ---------------------------------------------------
ptl_pattern(threads2_put_eqwait ARGS --threads 2 --wait eqwait)
ptl_pattern(threads2_put_multi ARGS --threads 2 --wait eqpoll-multi --ack on)
ptl_pattern(threads2_get_eqpoll ARGS --threads 2 --op get --wait eqpoll --recv fresh)
ptl_pattern(threads2_stream_4033 ARGS --threads 2 --shape stream --size 4033 --recv fresh -n 100)

# ---- 4 ranks: pairs (0,1) and (2,3) at once --------------------------------------------
ptl_pattern(np4_put_eqwait NP 4 ARGS --wait eqwait)
ptl_pattern(np4_stream_multi NP 4 ARGS --shape stream --wait eqpoll-multi --size 4033 -n 100)
ptl_pattern(np4_get_timeout NP 4 ARGS --op get --wait eqpoll-timeout --recv fresh)
ptl_pattern(np4_threads2 NP 4 ARGS --threads 2 --wait eqwait -n 100)

# ---- think: pauses, so that waiters and NIC threads go to sleep ------------------------
ptl_pattern(think_eqwait_sleep ARGS --wait eqwait --think 1500 --ack on -n 100)
ptl_pattern(think_split_region ARGS --wait eqwait-split --think 1500 --region on --size 4033 -n 100)
ptl_pattern(think_threads2_spin ARGS --threads 2 --think 200 --think-mode spin -n 100)
ptl_pattern(think_stream_get_fresh ARGS --shape stream --op get --recv fresh --think 1500 -n 50)
# AF (docs/waiting.md, "D1 without the sender's fence"; host mode): waiters spin 50 us,
# the least AF runs with, and each rank pauses 120 us before its operations, so nearly
# every wait ends asleep: an announcement on the bell and AF-M's membarrier before the
# recheck, against a peer that publishes to the fast box without F-SND. A lost wake-up
# shows as the backstop's "a wake-up did not come" (mp_driver fails it) or a wait
# past the watchdog. One thread (SO too), then two per rank (D3 and the token's RMWs).
ptl_pattern(think_af ARGS --wait eqwait --think 120 --ack on -n 2000 ENV PTL_WAIT_SPIN_US=50)
ptl_pattern(think_af_threads2 ARGS --threads 2 --wait eqwait --think 120 -n 1000
            ENV PTL_WAIT_SPIN_US=50)
# ... and that AF really ran there (host mode; the wait counters at PtlNIFini)
add_test(NAME mp_pat_think_af_on_host
  COMMAND ${MP_DRV} --no-residue --within 60 --stdout-has "ptl_patterns: OK"
          --stderr-has "peers skip F-SND to us (AF): yes" --
          ${MP_RUN} -n 2 --host-matching --timeout 50 --
          $<TARGET_FILE:mp_patterns> --check --wait eqwait --think 120 -n 300)
set_tests_properties(mp_pat_think_af_on_host PROPERTIES
  ENVIRONMENT "PTL_OFFLOAD=0;PTL_WAIT_SPIN_US=50;PTL_LOG_LEVEL=2"
  TIMEOUT 75 LABELS "mp;patterns")

# ---- the cooperative rendezvous (puts >= PTL_RNDV_COOP_MIN, 80 KiB) in client shapes ----
# START events off with PtlEQPoll; two threads each with its own 1 MiB exchange; a
# window of 4 ACKed 1 MiB puts; the initiator computing (spin) right after its put,
# so the target takes its part back; waiters asleep between operations
ptl_pattern(coop_startoff_eqpoll ARGS --size 1048576 --start off --wait eqpoll --region on -n 50)
ptl_pattern(coop_threads2 ARGS --threads 2 --size 1048576 --wait eqwait -n 30)
ptl_pattern(coop_stream_ack ARGS --shape stream --window 4 --size 1048576 --ack on -n 20)
ptl_pattern(coop_think_spin ARGS --size 262144 --think 300 --think-mode spin -n 50)
ptl_pattern(coop_think_sleep ARGS --size 262144 --start off --wait eqpoll-multi --think 1500 -n 50)

# ---- over libfabric: loopback and two "hosts" (issue 17 item 4) -----------------------
# ptl_pattern_ofi(<name> [NP n] ARGS a...): the pattern as mp_pat_<name>_ofi_offload/_host
# (ptlrun, PTL_TRANSPORT=ofi on loopback, label "ofi") and as mp_netns_pat_<name>_offload/
# _host (one job over the two network namespaces, ptl_netns_job in CMakeLists.txt; ranks
# 0 and 1, 2 and 3 on different "hosts"). A subset: every shape, op and wait family once,
# eager, rendezvous (RMA read) and 1 MiB sizes, the causal-order window, threads, 4 ranks
# and think time; fewer iterations than the matrix where each crosses TCP several times.
# libfabric's xnet core before 1.19 (`net` in Debian 12's 1.17): its fi_trywait
# neither looks at the CQ nor resets the CQ's wait object (transport/ofi.h,
# pt_ofi_trywait_blind; ofi.c, ofi_rx_pending does both through a wait set of its
# own). Where this libfabric offers it, the patterns marked NET below also run over
# it as mp_pat_<name>_ofi_net_*. (libfabric 1.17's net leaks an fi_info per
# connection at close, the provider alone too: the ASan stage's LeakSanitizer is told
# so, lsan-libfabric-net.supp.)
set(PTL_PAT_NET_ENV "")
if(PTL_WITH_OFI)
  find_program(PTL_FI_INFO fi_info)
  set(_fi_provs "")
  if(PTL_FI_INFO)
    execute_process(COMMAND ${PTL_FI_INFO} -l OUTPUT_VARIABLE _fi_provs ERROR_QUIET)
  endif()
  if(_fi_provs MATCHES "(^|\n)net:")
    set(PTL_PAT_NET_ENV ${PTL_MP_OFI_ENV} PTL_OFI_PROVIDER=net FI_NET_IFACE=lo ${PTL_LSAN_NET})
  else()
    message(STATUS "libportals tests: libfabric offers no net provider here: its patterns are not registered")
  endif()
endif()

# ptl_pattern_ofi(<name> [NP n] [NET] ARGS a...): over ofi on loopback and between the
# two namespaces; NET: over `net` too (above)
function(ptl_pattern_ofi name)
  cmake_parse_arguments(T "NET" "NP" "ARGS" ${ARGN})
  if(NOT T_NP)
    set(T_NP 2)
  endif()
  if(PTL_WITH_OFI)
    ptl_pattern(${name} NP ${T_NP} SUFFIX _ofi ENV ${PTL_MP_OFI_ENV} LABELS ofi ARGS ${T_ARGS})
    if(T_NET AND PTL_PAT_NET_ENV)
      ptl_pattern(${name} NP ${T_NP} SUFFIX _ofi_net ENV ${PTL_PAT_NET_ENV} LABELS ofi
                  ARGS ${T_ARGS})
    endif()
  endif()
  ptl_netns_job(pat_${name} NP ${T_NP} PROG mp_patterns ARGS --check ${T_ARGS}
                HAS "ptl_patterns: OK")
endfunction()

ptl_pattern_ofi(wait_eqwait NET ARGS --wait eqwait --start on --send-end on --ack on)
ptl_pattern_ofi(wait_multi_startoff ARGS --wait eqpoll-multi --start off --send-end on --ack on)
ptl_pattern_ofi(op_getput_fresh ARGS --op getput --recv fresh --region on --size 8)
ptl_pattern_ofi(size_put_1048576 ARGS --size 1048576 --region on --recv persistent -n 50)
ptl_pattern_ofi(size_get_1048576 NET ARGS --op get --size 1048576 --region on --recv fresh -n 50)
ptl_pattern_ofi(stream_get_65536 ARGS --shape stream --op get --size 65536 --wait eqpoll-multi -n 50)
ptl_pattern_ofi(order_stream_put_65536_w16 ARGS --shape stream --window 16 --size 65536 --ack on -n 100)
ptl_pattern_ofi(threads2_put_multi NET ARGS --threads 2 --wait eqpoll-multi --ack on)
ptl_pattern_ofi(np4_stream_multi NP 4 ARGS --shape stream --wait eqpoll-multi --size 4033 -n 100)
ptl_pattern_ofi(think_eqwait_sleep NET ARGS --wait eqwait --think 1500 --ack on -n 100)
# A PtlEQGet spinner over ofi (D5T, docs/waiting.md "A spinner on a descriptor"): its
# NIC thread sleeps beside it on the eventfd alone with a timeout, and releasers skip the
# hand-over. Paused (asleep in --think), the spinner leaves the ACKs and the delivery to
# that timed wake; in the get, each rank's engine answers the other's get while it spins.
# Across the two namespaces too since the 34th session: the 5-40 s stalls seen there were
# the two "hosts'" ranks bound to one core by their orteds, one starved by the other's
# spinner (tests/netns/run-two-hosts.sh, --bind-to none; engine/wait.c, the nap).
ptl_pattern_ofi(spin_think NET ARGS --wait eqget-spin --think 1500 --ack on -n 100)
# Idle means asleep: with 5 ms pauses before each exchange a rank's process (its
# application and NIC threads) must use the CPU for at most half of the wall time
# (--cpu-max; 1-6% measured, 100% where a sleeper's descriptor stayed readable and
# the NIC thread spun through poll(): `net` below before its wait set, fifty-second
# session). On shared memory and over the default provider.
set(PTL_PAT_IDLE --wait eqwait --think 5000 --ack on -n 100 --cpu-max 50)
ptl_pattern(think_idle ARGS ${PTL_PAT_IDLE})
if(PTL_WITH_OFI)
  ptl_pattern(think_idle SUFFIX _ofi ENV ${PTL_MP_OFI_ENV} LABELS ofi ARGS ${PTL_PAT_IDLE})
  if(PTL_PAT_NET_ENV)
    ptl_pattern(think_idle SUFFIX _ofi_net ENV ${PTL_PAT_NET_ENV} LABELS ofi ARGS ${PTL_PAT_IDLE})
  endif()
endif()
ptl_pattern_ofi(spin_get ARGS --op get --wait eqget-spin --start on -n 200)
# two threads of a rank, each spinning on PtlEQGet for its own exchange, pausing before
# each: one NI's engine taken in turns by two spinners and left to the NIC thread's
# timed wake while both sleep
ptl_pattern_ofi(spin_threads2_think ARGS --threads 2 --wait eqget-spin --think 1500 --ack on -n 100)

# ---- rings only (PTL_SHM_FBOX=0; fast boxes are on by default, transport/shm_region.h)
# Every pattern above runs through the fast boxes' lanes once a pair has exchanged 16
# messages. These run the same client shapes with the boxes off, every message through
# the descriptor rings: the plain client (START and SEND_END on, ACKs, 0 to 200 B), gets
# and getputs, a stream, two threads, four ranks.
foreach(a off on)
  ptl_pattern(rings_ev_ack${a} SUFFIX "" ARGS --wait eqwait --start on --send-end on --ack ${a}
              ENV PTL_SHM_FBOX=0)
endforeach()
foreach(sz 0 100 200)
  ptl_pattern(rings_size_put_${sz} ARGS --size ${sz} --ack on ENV PTL_SHM_FBOX=0)
endforeach()
ptl_pattern(rings_get_8 ARGS --op get --size 8 ENV PTL_SHM_FBOX=0)
ptl_pattern(rings_getput_64 ARGS --op getput --size 64 ENV PTL_SHM_FBOX=0)
ptl_pattern(rings_stream_8 ARGS --shape stream --window 16 --ack on ENV PTL_SHM_FBOX=0)
ptl_pattern(rings_threads2 ARGS --threads 2 --wait eqpoll ENV PTL_SHM_FBOX=0)
ptl_pattern(rings_n4 NP 4 ARGS --wait eqpoll-timeout --start off ENV PTL_SHM_FBOX=0)

# ---- the poll lease off (PTL_WAIT_LEASE_US=0; on by default in offload mode,
# docs/waiting.md "The poll lease"): the client shapes whose waits it spans (START,
# SEND_END and ACK events, PtlEQGet spinning, two threads sharing one lease)
foreach(a off on)
  ptl_pattern(nolease_ev_ack${a} SUFFIX "" ARGS --wait eqwait --start on --send-end on --ack ${a}
              ENV PTL_WAIT_LEASE_US=0)
endforeach()
ptl_pattern(nolease_eqget_spin ARGS --wait eqget-spin --ack on ENV PTL_WAIT_LEASE_US=0)
ptl_pattern(nolease_threads2 ARGS --threads 2 --wait eqpoll --ack on ENV PTL_WAIT_LEASE_US=0)
# a lease far longer than a turn: only the next wait or the NIC thread's end (T1) moves it
ptl_pattern(longlease_think ARGS --wait eqwait --think 300 --ack on -n 100 ENV PTL_WAIT_LEASE_US=5000)
# PtlEQGet spinners leave a lease at every look (engine/wait.c pt_wait_look): one that
# pauses (asleep) with its lease out, two threads spinning on one NI's lease, and a
# spinner whose NIC thread's timed sleep is at its longest (PTL_WAIT_LEASE_MAX_US)
ptl_pattern(spinlease_think ARGS --wait eqget-spin --think 1500 --ack on -n 100)
ptl_pattern(spinlease_threads2 ARGS --threads 2 --wait eqget-spin --ack on -n 100)
ptl_pattern(spinlease_stream_get ARGS --shape stream --op get --wait eqget-spin --window 8 -n 100)

# ---- beside other work (LOADED: two CPU-bound processes share the 2 cores) ------------
# A user's machine runs other programs too: every wake-up then waits for a core the
# loops hold (up to a 4 ms scheduler tick), a hand-over of the engine is preempted half
# way, a spinner's peer is off its core for whole slices. These run each way of
# waiting, START on and off, two threads, four ranks, a get and think time in both modes
# beside them, data-checked, under the watchdog (a wait over 5 s fails; a wait here
# takes microseconds to a few ms). First run on 2026-12-07 (release, all 202 pattern
# jobs beside the loops): every one passed, in 82 s.
foreach(w eqwait eqpoll eqpoll-timeout eqpoll-multi eqget-spin eqwait-split)
  ptl_pattern(loaded_${w} LOADED ARGS --wait ${w} --start on --send-end on --ack on -n 500)
endforeach()
ptl_pattern(loaded_eqwait_startoff LOADED ARGS --wait eqwait --start off --send-end off -n 500)
ptl_pattern(loaded_get_fresh LOADED ARGS --op get --recv fresh --wait eqpoll -n 500)
ptl_pattern(loaded_threads2 LOADED ARGS --threads 2 --wait eqwait --ack on -n 200)
ptl_pattern(loaded_np4 LOADED NP 4 ARGS --wait eqpoll-multi --start on -n 200)
ptl_pattern(loaded_think LOADED ARGS --wait eqwait --think 1500 --ack on -n 100)
ptl_pattern(loaded_stream_4033 LOADED ARGS --shape stream --size 4033 --recv fresh --ack on -n 100)

# ---- the two transports of one job (issue 17 item 2, transport/mix.c) ---------------
# Four ranks placed in order (MAP slot): the pattern's pairs (0,1) and (2,3) each on one
# "host", so they talk through that host's region while their engines sleep in poll()
# on libfabric's descriptor too: every wake-up of these must come through the region's
# ring socket. Without the wake-up backstop (PTL_WAKE_BACKSTOP_MS=0) and the liveness
# probe's timer (PTL_OFI_PROBE_MS=0), nothing else ends such a sleep: a ring that
# reached only the futex is a hang, which the pattern's watchdog reports (seen with the
# socket left out: HANG at iteration 0 in both modes; with the backstop on, the same
# defect only made waits of 100-200 ms). Think time makes every waiter and NIC thread
# sleep between operations.
function(ptl_pattern_mixed name)
  cmake_parse_arguments(T "" "" "ARGS" ${ARGN})
  ptl_netns_job(pat_${name} NP 4 MAP slot PROG mp_patterns ARGS --check ${T_ARGS}
                ENV PTL_WAKE_BACKSTOP_MS=0 PTL_OFI_PROBE_MS=0 HAS "ptl_patterns: OK")
endfunction()
ptl_pattern_mixed(here_eqwait_think ARGS --wait eqwait --think 1500 --ack on -n 100)
ptl_pattern_mixed(here_wait_eqwait ARGS --wait eqwait --start on --send-end on --ack on)
ptl_pattern_mixed(here_stream_multi ARGS --shape stream --wait eqpoll-multi --size 4033 -n 100)
ptl_pattern_mixed(here_put_1048576 ARGS --size 1048576 --region on --recv persistent -n 50)
ptl_pattern_mixed(here_threads2_eqwait ARGS --threads 2 --wait eqwait --ack on)
# the cooperative rendezvous between node peers (offered to them alone: xport.h
# peer_caps), and iovec MDs of many pieces by rendezvous to a node peer and to one on
# the other "host" (there: streamed through the queues, ofi's one-piece descriptors)
ptl_pattern_mixed(here_coop_think_spin ARGS --size 262144 --think 300 --think-mode spin -n 50)
ptl_pattern_mixed(here_coop_stream_ack ARGS --shape stream --window 4 --size 1048576 --ack on -n 20)
ptl_netns_job(iov_64x3_here NP 4 MAP slot PROG mp_iov ARGS 1048579 64 3 4097 333
              HAS "mp_iov 1048579 64 3 4097 333: OK")
ptl_netns_job(iov_64x3_across NP 2 PROG mp_iov ARGS 1048579 64 3 4097 333
              HAS "mp_iov 1048579 64 3 4097 333: OK")
# three ranks in order (2+1): the lone rank on the second "host" reaches both over ofi,
# the first two share their region (an audit: Open MPI 4.1 reports the first host's
# PMIX_LOCAL_SIZE on every host, and the check that trusted it sent such jobs all over
# ofi; with PTL_LOG_LEVEL=2 every rank says what it chose)
ptl_netns_job(exchange_n3_here NP 3 MAP slot PROG mp_exchange HAS "all pairs OK")
