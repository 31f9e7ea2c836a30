#!/usr/bin/env python3
"""
Weakened detectors must fail the tests: each mutation below disables one detection path of
sdcscan, or makes its threshold ten times looser, or lets the selftest matcher accept a finding
at the wrong element or bit. The script copies the tree (what git tracks, plus files it does not
ignore), builds it once without CUDA (the paths here are host code; the fake GPU module stands in) and
with MPI where it is installed (a mutation of the ranks' exchanges is judged by the mpi suite's
test named for it; the fast suites run without mpirun), then applies the mutations
one at a time: it rebuilds, runs the tests expected to notice first and, when none does, every
fast suite (unit, cli). It prints each mutation as killed (by which test) or SURVIVED, and exits
1 if any survived, did not apply (the code it mutates moved: update this table) or broke the
build.

    tests/mutate.py                  all mutations
    tests/mutate.py --list           their names and what each weakens
    tests/mutate.py NAME...          only these
    tests/mutate.py --keep DIR       build in DIR and leave it (default: a temporary directory)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

# name, what it weakens, file, [(text, replacement), ...] (each text must occur exactly once),
# the tests expected to notice (tried first; the full fast suites follow when none does).
MUTATIONS = [
    ("gemm-int8-check-off", "the int8 class's exact row checks pass every row",
     "src/probes/gemm/abft.c",
     [("\tif (sdc_abft_row_ok(&x))\n\t\treturn true;",
       "\tif (g->cfg.cls == SDC_GEMM_INT8 || sdc_abft_row_ok(&x))\n\t\treturn true;")],
     ["campaign", "selftest"]),
    ("gemm-exact-fp32-check-off", "the fp32 exact class's row checks pass every row",
     "src/probes/gemm/abft.c",
     [("\tif (sdc_abft_row_ok(&x))\n\t\treturn true;",
       "\tif (g->cfg.cls == SDC_GEMM_FP32 || sdc_abft_row_ok(&x))\n\t\treturn true;")],
     ["campaign", "selftest"]),
    ("gemm-exact-locate-off-by-one", "an exact-class mismatch is located one column off",
     "src/probes/gemm/abft.c",
     [("\tout->col = sdc_abft_locate(&g->layout, &x);", "\tout->col = sdc_abft_locate(&g->layout, &x) + 1;")],
     ["campaign", "selftest"]),
    ("gemm-fast-check-off", "the fast classes' V-ABFT row checks pass every row",
     "src/probes/gemm/abft.c",
     [("\tif (e <= t && e2 <= t2)", "\tif (1)")],
     ["campaign", "selftest"]),
    ("gemm-fast-threshold-x10", "the fast classes' checks compare with ten times the threshold",
     "src/probes/gemm/abft.c",
     [("t = g->thr[i], e2 = fabs(r2 - s2), t2 = g->thr2[i];",
       "t = 10 * g->thr[i], e2 = fabs(r2 - s2), t2 = 10 * g->thr2[i];")],
     ["campaign", "selftest", "gemm_fast"]),
    ("vabft-threshold-x10", "V-ABFT's threshold formula (CPU and GPU share it) ten times looser",
     "src/kernels/abft_ref.h",
     [("\t*t1 = emax * (t_det", "\t*t1 = 10 * emax * (t_det"),
      ("\t*t2 = emax * (w_det", "\t*t2 = 10 * emax * (w_det")],
     ["gpu_ref", "campaign", "gemm_fast"]),
    ("gemm-digest-b-off", "the operand digest of B always matches",
     "src/probes/gemm/abft.c",
     [("\treturn sdc_xxh64(g->cfg.cls == SDC_GEMM_INT8 ? (const void *)g->bp.data : g->b, g->b_bytes) == g->digest_b;",
       "\treturn true;")],
     ["campaign", "selftest"]),
    ("gemm-digest-a-off", "the operand digest of A always matches",
     "src/probes/gemm/abft.c",
     [("\treturn sdc_xxh64(g->a, g->a_bytes) == g->digest_a;", "\treturn true;")],
     ["selftest", "campaign"]),
    ("embbag-bag-check-off", "the embbag bag checks (output sums against the table's row sums) pass every bag",
     "src/probes/embbag/embbag_hd.h",
     [("\tv->bad = v->negzero || !(fabs(v->dc) <= v->tc) || !(fabs(v->dw) <= v->tw);", "\tv->bad = false;")],
     ["embbag", "selftest"]),
    ("embbag-threshold-x10", "the embbag fast class's bag thresholds ten times looser",
     "src/probes/embbag/embbag_hd.h",
     [("\tv->bad = v->negzero || !(fabs(v->dc) <= v->tc) || !(fabs(v->dw) <= v->tw);",
       "\tv->bad = v->negzero || !(fabs(v->dc) <= 10 * v->tc) || !(fabs(v->dw) <= 10 * v->tw);")],
     ["embbag", "selftest"]),
    ("embbag-sweep-off", "the table sweep at rest finds every row intact",
     "src/probes/embbag/lane.c",
     [("\t\tif (sdc_eb_row_intact(ew->t, r))\n\t\t\tcontinue;", "\t\tcontinue;")],
     ["embbag", "selftest"]),
    ("minitrain-golden-entry-off", "the state entering a step is not compared with the golden's hash",
     "src/probes/minitrain/minitrain.c",
     [("\tbool bad_entry = golden && entry != golden->traj.entry[s];", "\tbool bad_entry = false;")],
     ["minitrain", "selftest"]),
    ("minitrain-golden-checkpoint-off", "the golden's SHA-256 checkpoints are not compared",
     "src/probes/minitrain/minitrain.c",
     [("\t\tbad_entry |= memcmp(sha,", "\t\tbad_entry |= 0 && memcmp(sha,")],
     ["minitrain", "selftest"]),
    ("minitrain-golden-final-off", "the final state is not compared with the golden's last checkpoint",
     "src/probes/minitrain/minitrain.c",
     [("\t\t\tif (memcmp(sha, golden->traj.sha + (size_t)check * mw->ntraj * SDC_SHA256_LEN,\n",
       "\t\t\tif (0 && memcmp(sha, golden->traj.sha + (size_t)check * mw->ntraj * SDC_SHA256_LEN,\n")],
     ["minitrain", "selftest"]),
    ("minitrain-golden-loss-off", "the loss is not compared with the golden's",
     "src/probes/minitrain/minitrain.c",
     [("\t\tif (lbits != golden->traj.loss[s])", "\t\tif (0)")],
     ["minitrain", "selftest"]),
    ("minitrain-attn-off", "the attention GEMMs' column checks pass every column",
     "src/probes/minitrain/attn_check.c",
     [("\t\tif (!isnan(d1) && fabs(d1) <= bound)", "\t\tif (1)")],
     ["minitrain", "selftest"]),
    ("minitrain-attn-bound-x10", "the attention checks' error bound ten times looser",
     "src/probes/minitrain/mt_ops.h",
     [("\tconst double rel = SDC_XMULD((double)(k + 2), 0x1p-24);",
       "\tconst double rel = SDC_XMULD(10.0 * (k + 2), 0x1p-24);")],
     ["defaults", "minitrain", "selftest"]),
    ("allreduce-value-check-off", "the ring's per-element value check counts no wrong element",
     "src/probes/allreduce/ring_check.c",
     [("int64_t sdc_ring_count_wrong(const float *got, const int8_t *f, const int8_t *g, int64_t n, int count, int rsum)\n{",
       "int64_t sdc_ring_count_wrong(const float *got, const int8_t *f, const int8_t *g, int64_t n, int count, int rsum)\n{\n\tif (n >= 0)\n\t\treturn 0;")],
     ["kernels"]),
    ("allreduce-crc-off", "a hop's CRC32C is not compared: a corrupt link reads as the sender's fault",
     "src/probes/allreduce/ring_check.c",
     [("\tconst bool crc_ok = v->header_ok && header[0] == v->crc;", "\tconst bool crc_ok = v->header_ok;")],
     ["kernels"]),
    ("allreduce-header-check-off", "a hop's header is taken as intact",
     "src/probes/allreduce/ring_check.c",
     [("\tv->header_ok = header[1] == step && header[2] == sdc_crc32c(0, header, 8);", "\tv->header_ok = true;")],
     ["kernels"]),
    ("vote-off", "the cross-device vote sees every iteration as unanimous",
     "src/runner/vote.c",
     [("\tif (v->count[best] == participants)\n\t\treturn;", "\treturn;")],
     ["vote", "work_digest", "selftest"]),
    ("vote-names-majority", "the cross-device vote names the majority instead of the dissenters",
     "src/runner/vote.c",
     [("(majority && slots[i]->digest == slots[best]->digest)", "(majority && slots[i]->digest != slots[best]->digest)")],
     ["vote", "work_digest"]),
    ("selftest-any-element", "the selftest matcher accepts a finding at the wrong element",
     "src/run/record.c",
     [("\t    f->row != inj->row || f->col != inj->col)", "\t    0)")],
     ["findings", "selftest"]),
    ("selftest-any-bit", "the selftest matcher accepts a finding whose XOR mask misses the flipped bit",
     "src/run/record.c",
     [("\treturn inj->bit < 64 && (mask >> inj->bit) & 1ull;", "\treturn inj->bit < 64 && mask != 0;")],
     ["findings", "selftest"]),
    ("ecparity-check-off", "ecparity's stripe and column parities are never found broken",
     "src/probes/ecparity/parity.c",
     [("\t\tif (parity[w] != sum[w] && broken++ < max) {", "\t\tif (0) {")],
     ["ecparity", "selftest"]),
    ("ecparity-crc-off", "ecparity's difference messages are taken as intact",
     "src/probes/ecparity/ecparity.h",
     [("\treturn sdc_crc32c(0, m, 16) == m->hcrc && sdc_crc32c(0, m->diff, 4 * (size_t)words) == m->pcrc;",
       "\treturn true;")],
     ["ecparity", "selftest"]),
    ("ecparity-replay-check-off", "a lost server's rebuild is not compared with the replay",
     "src/probes/ecparity/host_check.c",
     [("\tconst bool same = !sdc_ec_differs_from_replay(&sh->st.l, rb->installed, rp->out, rb->out, &e);",
       "\tconst bool same = true;")],
     ["ecparity", "selftest"]),
    ("ecparity-locate-wrong-word", "ecparity names the word next to the corrupt one",
     "src/probes/ecparity/parity.c",
     [("\tout->word = stripe->word;", "\tout->word = stripe->word + 1;")],
     ["ecparity", "selftest"]),
    ("gpu-generator-check-off", "the GPU operand generator is not compared with its host twin",
     "src/probes/gemm/gpu.c",
     [("\t\tif (have == want)\n\t\t\tcontinue;", "\t\tcontinue;")],
     ["gpu_host"]),
    # The built-in parameters every uncalibrated host runs with (issue 29): each made ten times
    # larger (or smaller) where tests/unit/test_defaults.c pins it to its paper or its man page.
    ("default-emax-fp32-x10", "the fp32-fast built-in e_max (V-ABFT Table 1/7: 34 u) ten times larger",
     "src/probes/gemm/calibration.h",
     [("#define SDC_EMAX_FP32 (34 * 0x1p-24)", "#define SDC_EMAX_FP32 (340 * 0x1p-24)")],
     ["defaults"]),
    ("default-emax-fp64-x10", "the fp64-fast built-in e_max (66 u, the man page's) ten times larger",
     "src/probes/gemm/calibration.h",
     [("#define SDC_EMAX_FP64 (66 * 0x1p-53)", "#define SDC_EMAX_FP64 (660 * 0x1p-53)")],
     ["defaults"]),
    ("default-c-sigma-x10", "V-ABFT's c_sigma (2.5, Algorithm 1) of calibrate, campaign, bench and the GPU burn x10",
     "src/probes/gemm/abft.h",
     [("#define SDC_C_SIGMA 2.5", "#define SDC_C_SIGMA 25")],
     ["defaults"]),
    ("default-gemm-c-sigma-option-x10", "the gemm probe's c_sigma option default (2.5) ten times larger",
     "src/probes/gemm/gemm.c",
     [('offset = OPT(c_sigma), .def = "2.5"', 'offset = OPT(c_sigma), .def = "25"')],
     ["defaults"]),
    ("default-gpu-emax-fp32-fast-x10", "the GPU fp32-fast e_max (Table 7: 5e-9 sqrt(K) + 1.2e-7) x10",
     "src/probes/gemm/gpu.c",
     [("return 5.0e-9 * sqrt((double)k) + 1.2e-7;", "return 10 * (5.0e-9 * sqrt((double)k) + 1.2e-7);")],
     ["defaults"]),
    ("default-gpu-emax-bf16-fast-x10", "the GPU bf16-fast default e_max (2 u_bf16 + Table 7's FP32 accumulation) x10",
     "src/probes/gemm/gpu.c",
     [("\t\treturn 2 * unit_roundoff(8) + fp32_accumulation(k); /* BF16 */",
       "\t\treturn 10 * (2 * unit_roundoff(8) + fp32_accumulation(k)); /* BF16 */")],
     ["defaults", "gpu_fast_emax"]),
    ("default-calibration-min-gemms-div10", "calibrate's least GEMMs a size (100, the man page's) ten times fewer",
     "src/probes/gemm/calibration.h",
     [("#define SDC_CALIBRATION_MIN_GEMMS 100", "#define SDC_CALIBRATION_MIN_GEMMS 10")],
     ["defaults"]),
    ("default-fp32-exact-bound-x4", "the CPU fp32 exact class's data bound (k amax bmax <= 2^24) four times looser",
     "src/probes/gemm/abft.c",
     [("int64_t mx = (int64_t)floor(sqrt((double)(1 << 24) / k));",
       "int64_t mx = (int64_t)floor(sqrt((double)(1 << 26) / k));")],
     ["defaults"]),
    ("default-gpu-exact-bound-x8", "the GPU exact types' data bound (2^22, Fasi et al.'s 2^24 over 4) x8",
     "src/probes/gemm/gpu.c",
     [("#define TC_BOUND (1 << 22)", "#define TC_BOUND (1 << 25)")],
     ["defaults"]),
    ("default-gpu-burn-timeout-x10", "the deadline of calibrate/campaign --gpus (30 s) x10",
     "src/probes/gemm/gpu.c",
     [("c->timeout = 30;", "c->timeout = 300;")],
     ["defaults"]),
    ("default-embbag-c-sigma-option-x10", "the embbag probe's c_sigma option default (6) x10",
     "src/probes/embbag/embbag.c",
     [('offset = OPT(c_sigma), .def = "6"', 'offset = OPT(c_sigma), .def = "60"')],
     ["defaults"]),
    ("default-embbag-c-sigma-x10", "embbag's built-in c_sigma (campaign and bench defaults, 6) x10",
     "src/probes/embbag/embbag_hd.h",
     [("#define SDC_EB_C_SIGMA 6.0", "#define SDC_EB_C_SIGMA 60.0")],
     ["defaults"]),
    ("default-embbag-roundoff-x10", "embbag's bound with u ten times fp32's 2^-24",
     "src/probes/embbag/embbag_hd.h",
     [("const double u2_3 = 0x1p-48 / 3", "const double u2_3 = 100 * 0x1p-48 / 3")],
     ["defaults"]),
    ("default-embbag-fma-term-off", "embbag's bound without the fma's rounding term (2 qmax sum S^2 C_T)",
     "src/probes/embbag/embbag_hd.h",
     [("(d + 2) * qt + 2.0 * l->qmax * e->s2c", "(d + 2) * qt")],
     ["defaults"]),
    ("default-embbag-kw-x10", "embbag's weighted bound with k_w (the mean of (j+1)^2) ten times larger",
     "src/probes/embbag/embbag_hd.h",
     [("kw = (d + 1.0) * (2.0 * d + 1) / 6", "kw = 10 * (d + 1.0) * (2.0 * d + 1) / 6")],
     ["defaults"]),
    ("default-attn-near-inf-x10", "ATTNChecker's T_near-INF (1e10, section 4.2) ten times larger",
     "src/probes/minitrain/attn_check.h",
     [("#define SDC_ATTN_NEAR_INF_T 1e10", "#define SDC_ATTN_NEAR_INF_T 1e11")],
     ["defaults"]),
    ("default-attn-near-inf-div10", "ATTNChecker's T_near-INF (1e10) ten times smaller",
     "src/probes/minitrain/attn_check.h",
     [("#define SDC_ATTN_NEAR_INF_T 1e10", "#define SDC_ATTN_NEAR_INF_T 1e9")],
     ["defaults"]),
    ("default-gemm-gpu-timeout-x10", "gemm's gpu_timeout default (30 s in the man page) x10",
     "src/probes/gemm/gemm.c",
     [('offset = OPT(gpu_timeout), .def = "30"', 'offset = OPT(gpu_timeout), .def = "300"')],
     ["defaults"]),
    ("default-embbag-gpu-timeout-x10", "embbag's gpu_timeout default (30 s in the man page) x10",
     "src/probes/embbag/embbag.c",
     [('offset = OPT(gpu_timeout), .def = "30"', 'offset = OPT(gpu_timeout), .def = "300"')],
     ["defaults"]),
    ("default-minitrain-gpu-timeout-x10", "minitrain's gpu_timeout default (30 s in the man page) x10",
     "src/probes/minitrain/minitrain.c",
     [('offset = OPT(gpu_timeout), .def = "30"', 'offset = OPT(gpu_timeout), .def = "300"')],
     ["defaults"]),
    ("default-allreduce-timeout-x10", "allreduce's timeout default (30 s in the man page) x10",
     "src/probes/allreduce/allreduce.c",
     [('offset = OPT(timeout), .def = "30"', 'offset = OPT(timeout), .def = "300"')],
     ["defaults"]),
    ("default-ecparity-timeout-x10", "ecparity's timeout default (30 s in the man page) x10",
     "src/probes/ecparity/ecparity.c",
     [('offset = OPT(timeout), .def = "30"', 'offset = OPT(timeout), .def = "300"')],
     ["defaults"]),
    ("default-hang-timeout-x10", "hang_timeout, a worker's silence before it is named hung (120 s in the man page) x10",
     "src/runner/plan.c",
     [('offset = OPT(hang_timeout), .def = "120"', 'offset = OPT(hang_timeout), .def = "1200"')],
     ["defaults"]),
    ("default-fleet-timeout-x10", "the fleet's own wait (30 s in the man page) x10",
     "src/mpi/rank.c",
     [(".local_size = 1, .timeout = 30 }", ".local_size = 1, .timeout = 300 }")],
     ["defaults"]),
    ("default-watch-grace-x10", "the MPI watchdog's grace past the timeout (5 s in the man page) x10",
     "src/mpi/transport.h",
     [("#define SDC_FLEET_WATCH_GRACE 5.0", "#define SDC_FLEET_WATCH_GRACE 50.0")],
     ["defaults"]),
    ("iteration-jump-off", "a worker's digests out of order (a flipped loop counter) pass unsaid",
     "src/probe/worker.c",
     [("\tif (iter != w->digest_next) {", "\tif (0) {")],
     ["hostile", "cpu_faults"]),
    ("vote-ring-cap-off", "the vote's compare walks to a lane's count however far it jumped",
     "src/runner/vote.c",
     [("\tif (upto > from + RING)\n", "\tif (0)\n")],
     ["vote"]),
    ("burn-crash-record-off", "a worker process's fault handler is not installed: it dies with no record of where",
     "src/runner/burn_child.c",
     [("\t\tsigaction(fault_signals[i], &sa, NULL);", "\t\t(void)fault_signals[i];")],
     ["supervise", "hostile"]),
    ("hang-watch-x10", "a worker is named hung after ten times its hang_timeout",
     "src/runner/supervise.c",
     [("\t\tif (now - w->since >= timeout) {", "\t\tif (now - w->since >= 10 * timeout) {")],
     ["supervise", "hostile"]),
    ("burn-exit-unreported-ok", "a worker process that exits 0 without its results ends cleanly",
     "src/runner/supervise.c",
     [("\tif (code == 0 && (w->reported || w->corrupt)) {", "\tif (code == 0) {")],
     ["hostile"]),
    ("burn-exit-stuck-off", "a worker process that sent its results but does not exit is waited for",
     "src/runner/supervise.c",
     [("\t\t\tif (now - w->reported_at > grace) {", "\t\t\tif (0) {")],
     ["hostile"]),
    ("burn-hung-not-killed", "a worker process named hung is left running, not killed",
     "src/runner/supervise.c",
     [("\tif (w->pid > 0 && !w->reaped && !kill(w->pid, SIGKILL))\n\t\tw->killed = true;", "")],
     ["hostile", "supervise"]),
    ("burn-finding-check-off", "a finding record of no class is taken as it came",
     "src/runner/burn_records.c",
     [("\tif ((unsigned)f->cls > SDC_FINDING_HANG)\n", "\tif (0)\n")],
     ["hostile"]),
    ("burn-fork-threads-off", "a variant's process forks its workers though it runs other threads",
     "src/runner/burn_child.c",
     [("\tif (threads > 1) {", "\tif (0) {")],
     ["burn"]),
    ("burn-setup-check-off", "a setup record's times and scale are taken unchecked",
     "src/runner/burn_records.c",
     [("\tif (!isfinite(su->rate_scale) || su->rate_scale <= 0 ||", "\tif (0 && !isfinite(su->rate_scale) ||")],
     ["burn"]),
    ("burn-facts-check-off", "facts that are not a JSON object are merged into the report",
     "src/runner/burn_records.c",
     [("\tif (!json_is_object(j)) {", "\tif (!j) {")],
     ["burn"]),
    ("fleet-serve-ranks-off", "a fleet call a burn process asks for is made whatever ranks and tag it names",
     "src/mpi/transport_serve.c",
     [("a_rank(c->i[0]) && a_rank(c->i[1]) && sdc_mpi_probe_tag(c->i[2]);", "1;")],
     ["burn"]),
    ("fleet-serve-window-off", "a fleet call's payloads are taken wherever its record says they lie",
     "src/mpi/transport_serve.c",
     [("\t\tif (pa[k].off > wbytes || pa[k].len > wbytes - pa[k].off || pa[k].len > (uint64_t)INT32_MAX)\n\t\t\treturn false;\n", "")],
     ["burn"]),
    ("burn-digest-order-off", "a result digest out of order in a worker's ring goes to the vote",
     "src/runner/supervise.c",
     [("\t\tif (d.iteration != w->digest_next) {", "\t\tif (0) {")],
     ["hostile"]),
    ("sticky-critical-off", "a CRITICAL node state is replaced by the next clean run",
     "src/runner/history.c",
     [("\tconst bool sticky = s->verdict == SDC_CRITICAL;", "\tconst bool sticky = false;")],
     ["verdict_life"]),
    ("partial-counts-as-full", "a run with --set, --duration, --cpus or --gpus counts as a full scheduled run",
     "src/commands/run.c",
     [("o->probes.n || o->sets.n || o->duration > 0 || cli->have_cpus || cli->have_gpus ? SDC_RUN_PARTIAL",
       "o->probes.n ? SDC_RUN_PARTIAL")],
     ["critical_kept"]),
    ("clean-run-coverage-off", "a clean run counts toward clearing a CRITICAL whatever places it tested",
     "src/runner/history.c",
     [("v == SDC_OK && tested_places(s, report) ?", "v == SDC_OK ?")],
     ["critical_kept"]),
    ("tested-nothing-off", "a run in which no probe ran is OK",
     "src/runner/runner.c",
     [("		check_tested_something(run, plan);\n", "")],
     ["critical_kept"]),
    ("state-written-last", "history is written before the node's state (a full disk loses the CRITICAL)",
     "src/runner/history.c",
     [("	if (write_state(dir, s, err, errlen))\n\t\treturn -1;\n\tjson_object_set_new(report, \"node\", sdc_node_json(s));\n\tif (save_history(dir, report, seq, kind, v, err, errlen)) {",
       "\tjson_object_set_new(report, \"node\", sdc_node_json(s));\n\tif (save_history(dir, report, seq, kind, v, err, errlen) || write_state(dir, s, err, errlen)) {")],
     ["critical_kept"]),
    ("state-rebuild-off", "an unreadable state.json starts anew instead of being rebuilt from history",
     "src/runner/history.c",
     [("	if (!rebuild(dir, s, rwhy, sizeof(rwhy))) {", "	if (0) {")],
     ["critical_kept"]),
    ("freshness-any-run", "a replay or partial run makes the node fresh (last success)",
     "src/commands/run.c",
     [("double last_success = full && v == SDC_OK ? end : 0", "double last_success = v == SDC_OK ? end : 0")],
     ["critical_kept"]),
    ("died-prom-node-verdict", "status --prom gives a died run the node's verdict as its own",
     "src/commands/status.c",
     [("\"status\", sdc_verdict_name(SDC_UNKNOWN), \"code\",\n\t\t\t\t\t\t    sdc_exit_code(SDC_UNKNOWN,",
       "\"status\", sdc_verdict_name(v), \"code\",\n\t\t\t\t\t\t    sdc_exit_code(v,")],
     ["critical_kept"]),
    ("status-file-node-off", "status REPORT ignores the report's node section",
     "src/commands/status.c",
     [("	if (rnode >= 0 && rnode == SDC_CRITICAL)\n\t\tbase = SDC_CRITICAL;", "")],
     ["critical_kept"]),
    ("npd-skew-over-critical", "under a clock skew, the npd line and the degraded question lose the CRITICAL's place",
     "src/commands/status.c",
     [("\t\t\t\t  .degraded = stale || skew || base == SDC_WARNING,", "\t\t\t\t  .degraded = base == SDC_WARNING,")],
     ["critical_kept"]),
    ("status-spoiled-report-hides-node", "a spoiled last.json makes status UNKNOWN though the node's state is CRITICAL",
     "src/commands/status.c",
     [("\tif (!have && nrc == 0) {", "\tif (0) {")],
     ["critical_kept", "state_property"]),
    ("died-after-skew-unsaid", "a run that died after a report dated ahead is not said to have died",
     "src/commands/status.c",
     [(" || s.end > now + CLOCK_SLACK;", ";")],
     ["critical_kept", "state_property"]),
    ("host-place-blocks-clear", "a CRITICAL of the host as a whole (an uncorrected DIMM error, a vote) keeps clear_after_clean_runs from ever clearing it",
     "src/runner/history.c",
     [(" ||\n\t\t    !strcmp(device, \"host\"))", ")")],
     ["critical_kept", "state_property"]),
    ("died-run-off", "status gives the last report's verdict though a run started after it died",
     "src/commands/status.c",
     [("\tif (started == 1 && !st.alive &&", "\tif (0 && started == 1 && !st.alive &&")],
     ["verdict_life", "state"]),
    ("never-injected-off", "an --inject that never took effect leaves the verdict as it was",
     "src/runner/inject_check.c",
     [("\t\tif (applied)\n\t\t\tcontinue;", "\t\tif (1)\n\t\t\tcontinue;")],
     ["verdict_life"]),
    ("idle-cpu-guard-off", "run --if-idle runs however busy the CPUs are",
     "src/runner/idle.c",
     [("\tif (busy > SDC_IDLE_CPU_BUSY) {", "\tif (0) {")],
     ["idle"]),
    ("first-iteration-wait-x0", "a slow but live first iteration is cut at ten times its variant's time again",
     "src/runner/variant.c",
     [("SDC_MAX(10.0, 10 * SDC_MAX(share, hang))", "SDC_MAX(10.0, 10 * share)")],
     ["supervise"]),
    ("ecparity-end-check-off", "ecparity's end-of-run replay of every server's training is not done",
     "src/probes/ecparity/host_round.c",
     [("\tif (!sh->bar.abort && rounds > 0)\n\t\tsdc_ec_host_end_check(w, sh, rounds, owner);", "")],
     ["ecparity"]),
    ("ecparity-first-round-off", "ecparity's time reserve may stop a run before its first round",
     "src/probes/ecparity/host_barrier.c",
     [("\tif (w->ctx->max_iterations || !sdc_worker_iterations(w))", "\tif (w->ctx->max_iterations)")],
     ["ecparity"]),
    ("prom-interrupted-failed", "an interrupted probe reads sdcscan_probe_failed 1, as a corruption does",
     "src/runner/export.c",
     [("#define L_FAILED L_DEGRADED", "#define L_FAILED L_INTERRUPTED")],
     ["metrics"]),
    ("prom-cut-short-ok", "a variant a signal cut short reads ok in the metrics' status",
     "src/runner/export.c",
     [("\t\t\treturn interrupted ? L_INTERRUPTED : L_OK;", "\t\t\treturn L_OK;")],
     ["metrics"]),
    ("prom-not-run-error", "a variant the run never started (interrupted) reads error in the metrics",
     "src/runner/export.c",
     [("\t\tcase SDC_STATUS_NOT_RUN: /* the run ended (a signal) before it started */\n\t\t\treturn L_INTERRUPTED;",
       "\t\tcase SDC_STATUS_NOT_RUN:\n\t\t\treturn L_ERROR;")],
     ["metrics"]),
    ("prom-findings-no-status", "a finding (a health check's, a vote's) does not set its probe's status",
     "src/runner/export.c",
     [("\t\tconst enum status_label l = finding_label(sdc_json_str(x, \"class\"));\n\t\tif (l > q->label)",
       "\t\tconst enum status_label l = finding_label(sdc_json_str(x, \"class\"));\n\t\tif (0 && l > q->label)")],
     ["metrics"]),
    ("prom-injected-label-false", "an injected run's series read injected=\"false\"",
     "src/runner/export.c",
     [("\tconst bool injected = json_array_size(json_object_get(run, \"inject\")) > 0;", "\tconst bool injected = false;")],
     ["metrics"]),
    ("prom-cpu-empty-gpu-labels", "a CPU's series carry empty gpu and UUID labels again",
     "src/runner/export.c",
     [("\t\tput_label(t, &first, \"device\", q->device);\n\t}",
       "\t\tput_label(t, &first, \"device\", q->device);\n\t\tput(t, \",gpu=\\\"\\\",UUID=\\\"\\\"\");\n\t}")],
     ["metrics", "state"]),
    ("prom-skipped-run-error", "every probe of a run --if-idle skipped reads error in the metrics",
     "src/runner/export.c",
     [("\tif (!json_array_size(results) && !run_skipped(report)) {", "\tif (!json_array_size(results)) {")],
     ["metrics"]),
    ("alert-injected-corruption", "the corrupt-device alert fires on a test's injected corruption",
     "packaging/prometheus/sdcscan-rules.yml",
     [("sdcscan_probe_failed{status=~\"corrupt|crashed\",injected=\"false\"} == 1",
       "sdcscan_probe_failed{status=~\"corrupt|crashed\"} == 1")],
     ["prometheus"]),
    ("alert-stale-x10", "the stale-scan alert waits twenty days, not two",
     "packaging/prometheus/sdcscan-rules.yml",
     [("time() - sdcscan_last_full_run_timestamp_seconds > 2 * 86400",
       "time() - sdcscan_last_full_run_timestamp_seconds > 20 * 86400")],
     ["prometheus"]),
    ("campaign-html-missed-off", "a campaign page (--html) draws no bar for a MISSED count",
     "src/base/html.c",
     [("\t\tif (!(v > 0))\n\t\t\tcontinue;\n\t\tconst double h", "\t\tif (!(v > 0) || s == c->mark)\n\t\t\tcontinue;\n\t\tconst double h")],
     ["campaign_html"]),
    ("campaign-html-escape-off", "a campaign page writes the JSON's names as markup",
     "src/base/html.c",
     [("\t\tswitch (*p) {", "\t\tswitch (*p ? 0 : *p) {")],
     ["campaign_html"]),
    ("decimal-int-off", "--set, a profile's and --seed's integers are read in any base again (0x40 as 64, 010 as 8)",
     "src/base/parse.c",
     [("\tif (!s || !decimal_syntax(s, true, false))", "\tif (!s || !*s)"),
      ("strtoll(s, &end, 10)", "strtoll(s, &end, 0)"),
      ("\tif (!s || !decimal_syntax(s, false, false))", "\tif (!s || !*s || *s == '-')"),
      ("strtoull(s, &end, 10)", "strtoull(s, &end, 0)")],
     ["util", "profile", "inputs"]),
    ("decimal-double-off", "a number with a fraction is read in hexadecimal too (--duration 0x10 burned 16 s)",
     "src/base/parse.c",
     [("\tif (!s || !decimal_syntax(s, true, true))", "\tif (!s || !*s)")],
     ["util", "profile", "inputs"]),
    ("decimal-why-off", "a number in another base is refused without saying that numbers are decimal",
     "src/base/parse.c",
     [("\treturn s[0] == '0' && s[1] && strchr(\"xXbBoO\", s[1]);", "\treturn (void)s, false;")],
     ["util", "profile", "inputs"]),
    ("procfs-read-by-size", "a procfs file (size 0 in stat) is read by its size: the start record's boot id is empty",
     "src/base/files.c",
     [("\tconst bool pseudo = st.st_size == 0 && kernel_fs(fd);", "\tconst bool pseudo = false;")],
     ["util", "inputs"]),
    ("output-path-create-off", "a report's folder is not tried with a file: --json /proc/version burns, then fails",
     "src/base/files.c",
     [("\tconst int fd = create_temp(dirfd, name, shown, tmp, err, errlen);\n\tif (fd >= 0) {",
       "\tconst int fd = ((void)tmp, 0);\n\tif (0) {")],
     ["inputs"]),
    ("state-dir-file-off", "a file given as the state directory is not named \"not a directory\"",
     "src/runner/state.c",
     [("\tif (!S_ISDIR(st.st_mode)) {", "\tif (0) {")],
     ["inputs", "state"]),
    ("error-escape-off", "an error line echoes what was typed with its control characters raw",
     "src/base/message.c",
     [("\tsdc_escape(shown, sizeof(shown), line);", "\tsdc_strlcpy(shown, line, sizeof(shown));")],
     ["inputs"]),
    ("cli-bad-escape-off", "a command-line error echoes the option's value with its control characters raw",
     "src/probe/command.c",
     [("\tsdc_print_line(stderr, \"sdcscan %s: %s (see 'sdcscan %s --help')\", cli->command, msg, cli->command);",
       "\tfprintf(stderr, \"sdcscan %s: %s (see 'sdcscan %s --help')\\n\", cli->command, msg, cli->command);")],
     ["inputs"]),
    ("json-nul-off", "a report, peer record or golden file with a raw NUL byte reaches jansson",
     "src/base/json_scan.c",
     [("\treturn len ? memchr(text, '\\0', len) : NULL;", "\treturn (void)text, (void)len, NULL;")],
     ["fleet_read"]),
    ("overrun-loose", "a one-iteration result ten times later than the rule allows is not named too short",
     "src/runner/shares.c",
     [("\treturn iterations == 1 && late > SDC_MAX(0.05, 0.25 * span) ? late : 0;",
       "\treturn iterations == 1 && late > SDC_MAX(0.5, 2.5 * span) ? late : 0;")],
     ["overrun"]),
    ("overrun-off", "no result says its one iteration overran",
     "src/runner/shares.c",
     [("\treturn iterations == 1 && late > SDC_MAX(0.05, 0.25 * span) ? late : 0;",
       "\treturn (void)iterations, (void)span, (void)late, 0;")],
     ["overrun", "short"]),
    ("nccl-leave-off", "a rank that gave up on a lost peer leaves without telling the others",
     "src/probes/allreduce/nccl.c",
     [("\t\t\tsdc_mpi_leave(r->live);\n", "")],
     ["mpi_nccl"]),
    ("nccl-agree-deadline-short", "the exchange after a collective does not wait for a rank still inside it",
     "src/probes/allreduce/nccl.c",
     [("r->sh->timeout + PING_S + AGREE_MARGIN_S);", "PING_S + AGREE_MARGIN_S);")],
     ["mpi_nccl"]),
    ("fleet-identity-off", "sdcscan fleet takes two machines of one hostname for one host (their machine-id ignored)",
     "src/commands/fleet_store.c",
     [("\tif (text_put(sc, k < 3 ? FL_S(r, ids[k]) : folder))", "\tif (text_put(sc, \"\"))")],
     ["fleet"]),
    ("fleet-same-hostname-off", "sdcscan fleet does not name machines that share a hostname",
     "src/commands/fleet_store.c",
     [("\tif (left < 2)\n\t\treturn;", "\tif (left < 2 || 1)\n\t\treturn;")],
     ["fleet"]),
    ("fleet-skew-hides-critical", "a CRITICAL report dated ahead loses to an older OK one (the skew hides it)",
     "src/commands/fleet_store.c",
     [("const bool f_stands = f->verdict == SDC_CRITICAL && o->verdict != SDC_CRITICAL;", "const bool f_stands = false;")],
     ["fleet"]),
    ("fleet-standing-skew-unsaid", "a standing report dated ahead is not named as a clock skew",
     "src/commands/fleet_store.c",
     [("\t\tif (h->present && h->future)\n", "\t\tif (h->present && h->future && 0)\n")],
     ["fleet"]),
    ("fleet-links-out-followed", "sdcscan fleet follows a link out of the reports' folder",
     "src/commands/fleet.c",
     [("const bool inside = real && !strncmp(real, root, n) && (real[n] == '/' || !strcmp(root, \"/\"));",
       "const bool inside = real != NULL;")],
     ["fleet"]),
    ("fleet-error-echoes-bytes", "a report that is not JSON is refused quoting its bytes (jansson's near '...')",
     "src/commands/fleet.c",
     [("\t\t\t*near = '\\0';\n", "\t\t\t(void)near;\n")],
     ["fleet"]),
    ("fleet-hosts-folder-off", "--hosts does not know a host by the folder its report lies in",
     "src/commands/fleet.c",
     [("(end && end > start && sdc_fl_intern(names, start, (size_t)(end - start)) == FL_NONE)", "0")],
     ["fleet"]),
    ("report-identity-off", "a report does not name its machine (machine-id, boot id)",
     "src/runner/report.c",
     [("\t\tif (!blank)\n\t\t\tjson_object_set_new(h, ids[i].key", "\t\tif (!blank && 0)\n\t\t\tjson_object_set_new(h, ids[i].key")],
     ["fleet"]),
    ("fleet-html-slow-warns", "the fleet page makes a host slower than the fleet's median a WARNING (the text does not)",
     "src/commands/fleet_html.c",
     [("\t\t\t\tk |= K_SLOW;", "\t\t\t\tk |= K_WARN;")],
     ["fleet_html"]),
    ("fleet-html-level-off", "the fleet page groups hosts by their cells, not the fleet's one rule",
     "src/commands/fleet_page.html",
     [("  if (h.level === \"WARNING\") return h.verdict === \"WARNING\" ? 1 : 3;",
       "  if (h.level === \"WARNING\" || h.cells.indexOf(\"l\") >= 0) return h.verdict === \"WARNING\" ? 1 : 3;")],
     ["fleet_html"]),
    ("fleet-html-pane-empty", "the fleet page's side pane is empty until a click",
     "src/commands/fleet_page.html",
     [("  if (h) { detail(h); break; }", "  if (h) { break; }")],
     ["fleet_html"]),
    ("campaign-html-embbag-share-missed", "campaign embbag's page draws a met share target's unfound flips as MISSED",
     "src/inject/campaign_html.c",
     [("const double missed = need && met ? 0 : trials - det;", "const double missed = need && !json_is_number(need) ? 0 : trials - det;")],
     ["campaign_html"]),
    ("campaign-html-embbag-cells-x10", "campaign embbag's page puts ten times the cells in a chart (their names overlap)",
     "src/inject/campaign_html.c",
     [("#define EB_CELLS_A_CHART 4", "#define EB_CELLS_A_CHART 40")],
     ["campaign_html"]),
    ("ring-neighbour-wait-off", "the ring's exchange waits on a plain deadline, without heartbeats or notices",
     "src/mpi/transport.c",
     [("\treturn exchange(send, nsend, dst, recv, nrecv, src, tag, timeout, late, true);",
       "\treturn exchange(send, nsend, dst, recv, nrecv, src, tag, timeout, late, false);")],
     ["mpi_allreduce"]),
    ("gpu-emax-tf32-default-x10", "the GPU tf32-fast default e_max (2 u_tf32 + Table 7's FP32 accumulation) x10",
     "src/probes/gemm/gpu.c",
     [("\t\treturn 2 * unit_roundoff(11) + fp32_accumulation(k);",
       "\t\treturn 10 * (2 * unit_roundoff(11) + fp32_accumulation(k));")],
     ["gpu_fast_emax", "defaults"]),
    ("roofline-check-bytes-off", "the checked GEMM's roofline leaves out the row check's re-read of C (no design misses)",
     "src/probe/roofline.c",
     [("\tout->t_check = check_bytes / bandwidth;", "\tout->t_check = 0 * check_bytes / bandwidth;")],
     ["roofline"]),
    ("gpu-check-verdict-ok-untested", "gpu-check's summary says ok with claims not tested (none failed)",
     "tools/gpu-check-run.sh",
     [('\telif [ $nt = "$all" ]; then', '\telif [ $nf = 0 ]; then')],
     ["gpu_claims"]),
    ("gpu-check-missed-speed-tested", "a bench that missed its speed target counts its speed claim tested",
     "tools/gpu-check-run.sh",
     [("return id ~ /bits$/ ? (fake ? 2 : 1) : 5", "return fake ? 2 : 1")],
     ["gpu_claims"]),
    ("gpu-check-no-sanitizer-tested", "a stage not tested here (one GPU, no sanitizer) counts as tested",
     "tools/gpu-check-run.sh",
     [("\t\tif (r ~ /^not tested here/) return 4", "\t\tif (r ~ /^not tested here/) return 1")],
     ["gpu_claims"]),
    ("gpu-check-sanitizer-findings-off", "compute-sanitizer's findings (exit 9, a nonzero summary) are not failures",
     "tools/gpu-check-run.sh",
     [("\t[ $r = 9 ] && return 1\n", "\t: $r\n"),
      ("\tgrep -Eq '^========= (ERROR SUMMARY: [1-9]|RACECHECK SUMMARY: [1-9])' \"$l\" && return 1\n", "")],
     ["gpu_claims"]),
    ("gpu-check-stage-bar-kept", "a '|' in a stage's result is kept, shifting .stages' columns",
     "tools/gpu-check-run.sh",
     [('gsub(/\\|/, "/", r); ', '')],
     ["gpu_claims"]),
    ("gpu-check-gpu-count-off", "gpu-check's info stage passes a module that sees fewer GPUs than nvidia-smi -L lists",
     "tools/gpu-check-run.sh",
     [('\telif [ "$1" != "${2:-0}" ]; then', '\telif false; then')],
     ["gpu_claims"]),
    ("gpu-calibration-depth-unscaled", "a GPU calibration shallower than the burn is applied at the burn's depth unscaled",
     "src/probes/gemm/gpu.c",
     [("\tif (source[0] && deepest < k) {", "\tif (source[0] && deepest < 0) {")],
     ["gpu_host"]),
    ("xgemm-scalar-shared-loads", "the exact GEMM's tiles unaligned, its patch 8 scalar loads a step (12 wavefronts, not 3)",
     "src/probes/minitrain/xgemm.cu",
     [("\t__shared__ __align__(16) float as[BK]", "\t__shared__ float as[BK]"),
      ("\t__shared__ __align__(16) float bs[BK]", "\t__shared__ float bs[BK]"),
      ("\t\t\tconst float av[TM] = { a4.x, a4.y, a4.z, a4.w }, bv[TN] = { b4.x, b4.y, b4.z, b4.w };",
       "\t\t\t(void)a4, (void)b4;\n\t\t\tfloat av[TM], bv[TN];\n\t\t\tfor (int i = 0; i < TM; i++)\n"
       "\t\t\t\tav[i] = as[p][ty * TM + i];\n\t\t\tfor (int j = 0; j < TN; j++)\n\t\t\t\tbv[j] = bs[p][tx * TN + j];")],
     ["ptx_lint_xgemm"]),
    ("roofline-wavefronts-no-conflicts", "the roofline counts one shared-memory wavefront whatever the bank conflicts",
     "src/probe/roofline.c",
     [("\t\tmost = distinct > most ? distinct : most;", "\t\tmost = distinct > most ? 1 : most;")],
     ["roofline"]),
    ("gpu-check-training-miss-fails-gemm", "bench minitrain's training target missed fails the exact GEMM's speed claim",
     "tools/gpu-check-run.sh",
     [("\tcase $1:$2 in bench-minitrain:2)", "\tcase $1:$2 in bench-minitrain:0)")],
     ["gpu_claims"]),
    ("gpu-fingerprint-set-end-off", "the burn fingerprints its operands only where a fault is injected, not at a set's end",
     "src/probes/gemm/gpu.c",
     [("\treturn (faults & FAULT_AB) || (iter + 1) % l->sh->gpu_refresh == 0;",
       "\treturn (faults & FAULT_AB) || ((iter + 1) % l->sh->gpu_refresh == 0 && !l);")],
     ["gpu_host"]),
    ("gpu-fingerprint-end-off", "the burn's lane ends without fingerprinting operands its last iteration did not",
     "src/probes/gemm/gpu.c",
     [("\t\tsdc_gemm_lane_verify_at_end(&l, next, flight_iter);", "\t\t(void)next;")],
     ["gpu_host"]),
    ("roofline-burn-fingerprint-every-gemm", "the burn's roofline and bench overhead's burn take fingerprints every GEMM",
     "src/probes/gemm/bench_gpu.c",
     [("gpu->bandwidth / refresh;", "gpu->bandwidth / 1;")],
     ["roofline"]),
]

FAST_SUITES = ["unit", "cli"]


def sh(cmd, cwd, log=None, env=None):
    with open(log or os.devnull, "w") as out:
        return subprocess.call(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)


def copy_tree(src, dst):
    files = subprocess.check_output(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=src).split(b"\0")
    for f in files:
        if not f:
            continue
        rel = f.decode()
        if not os.path.isfile(os.path.join(src, rel)):
            continue  # deleted in the working tree
        os.makedirs(os.path.dirname(os.path.join(dst, rel)) or dst, exist_ok=True)
        shutil.copy2(os.path.join(src, rel), os.path.join(dst, rel))


def failed_tests(build):
    """Names of the tests that failed in the last meson test run."""
    bad = []
    with open(os.path.join(build, "meson-logs", "testlog.json")) as f:
        for line in f:
            r = json.loads(line)
            if r["result"] not in ("OK", "SKIP", "EXPECTEDFAIL"):
                bad.append(r["name"].split(":")[-1].replace(" / ", "/"))
    return bad


def run_tests(build, names, suites, env):
    cmd = ["meson", "test", "--no-rebuild", "--print-errorlogs", "-C", build, "--num-processes", "2"]
    for s in suites:
        cmd += ["--suite", s]
    rc = sh(cmd + names, ".", os.path.join(build, "mutation-test.log"), env)
    return failed_tests(build) if rc else []


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="mutations to apply (default: all)")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and leave it there")
    args = ap.parse_args()
    if args.list:
        for m in MUTATIONS:
            print("%-32s %s (%s)" % (m[0], m[1], m[2]))
        return 0
    known = {m[0] for m in MUTATIONS}
    unknown = [n for n in args.names if n not in known]
    if unknown:
        print("mutate.py: no mutation named %s (see --list)" % ", ".join(unknown), file=sys.stderr)
        return 2
    chosen = [m for m in MUTATIONS if not args.names or m[0] in args.names]

    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    work = args.keep or tempfile.mkdtemp(prefix="sdcscan-mutate-")
    tree, build = os.path.join(work, "tree"), os.path.join(work, "build")
    if os.path.exists(tree):
        shutil.rmtree(tree)
    copy_tree(src, tree)
    # The tests must see the tree as a user's machine does: no GPU module or NVML from the shell.
    env = {k: v for k, v in os.environ.items() if k not in ("SDCSCAN_GPU_MODULE", "SDCSCAN_NVML_LIBRARY",
                                                          "SDCSCAN_CALIBRATION")}
    t0 = time.time()
    if not os.path.exists(os.path.join(build, "build.ninja")):
        if sh(["meson", "setup", build, tree, "-Dcuda=disabled", "-Dnccl=disabled"], ".",
              os.path.join(work, "setup.log"), env):
            print("mutate.py: meson setup failed (%s)" % os.path.join(work, "setup.log"), file=sys.stderr)
            return 2
    if sh(["ninja", "-C", build], ".", os.path.join(work, "build.log"), env):
        print("mutate.py: the unmutated tree does not build (%s)" % os.path.join(work, "build.log"), file=sys.stderr)
        return 2
    # The unmutated tree must pass what the mutations are judged by, or a "kill" means nothing.
    base = run_tests(build, [], FAST_SUITES, env)
    if base:
        print("mutate.py: the unmutated tree fails %s: no mutation can be judged" % ", ".join(base), file=sys.stderr)
        return 2
    print("baseline: built and passed the fast suites in %.0f s (%s)" % (time.time() - t0, work))

    rows, survived, broken = [], 0, 0
    for name, what, path, edits, first in chosen:
        t1 = time.time()
        fpath = os.path.join(tree, path)
        orig = open(fpath).read()
        text = orig
        status = None
        for old, new in edits:
            if text.count(old) != 1:
                status = "DID NOT APPLY (the text occurs %d times)" % text.count(old)
                break
            text = text.replace(old, new)
        if status is None:
            open(fpath, "w").write(text)
            if sh(["ninja", "-C", build], ".", os.path.join(work, "build-%s.log" % name), env):
                status = "BUILD FAILED (%s)" % os.path.join(work, "build-%s.log" % name)
            else:
                killers = run_tests(build, first, [], env)
                if not killers:
                    killers = run_tests(build, [], FAST_SUITES, env)
                status = "killed by " + ", ".join(killers) if killers else "SURVIVED"
        open(fpath, "w").write(orig)
        os.utime(fpath)  # newer than the mutated build, so the next rebuild takes it
        survived += status == "SURVIVED"
        broken += status.startswith(("DID NOT", "BUILD"))
        rows.append((name, what, status))
        print("%-32s %-44s %5.0f s  (%s)" % (name, status, time.time() - t1, what), flush=True)
    sh(["ninja", "-C", build], ".", None, env)
    killed = len(rows) - survived - broken
    print("\n%d mutations: %d killed, %d survived, %d could not be judged (%.0f s)" %
          (len(rows), killed, survived, broken, time.time() - t0))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if survived or broken else 0


if __name__ == "__main__":
    sys.exit(main())
