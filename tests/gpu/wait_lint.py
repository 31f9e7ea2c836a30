#!/usr/bin/env python3
"""
The GPU module's rule (src/kernels/gpu_module.h): no call waits on a GPU past the probe's
deadline, and a GPU found hung is given up, never freed. This lint reads the module's CUDA
sources and fails on every call that can wait without a deadline, or that frees or copies in a way
that can, outside the few helpers of cuda_util.cu that are written for it:

  sync       calls that wait for a stream, an event or the device with no deadline
             (cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize, the synchronous
             cudaMemcpy* / cudaMemset*, cudaDeviceReset, ...), anywhere
  free       cudaFree / cudaFreeHost / cudaFreeArray (cudaFree of memory not from the stream-ordered
             allocator "may perform implicit synchronization": CUDA Runtime API, cudaFree;
             cudaFreeHost is not documented as asynchronous), cublasDestroy / cublasLtDestroy
             ("cublasDestroy() will implicitly call cudaDeviceSynchronize()": cuBLAS docs,
             cublasCreate), and cudaHostUnregister, anywhere
  helper     calls allowed only inside the helper written for them (SANCTIONED below): the
             stream-ordered cudaMallocAsync / cudaFreeAsync (the free must test the GPU's hung flag
             first), pinned allocations, cudaEventQuery / cudaStreamQuery (the polls to a deadline)
  host-copy  an asynchronous copy that touches host memory (any kind but cudaMemcpyDeviceToDevice):
             from or to pageable memory it can wait for the stream with no deadline ("API
             synchronization behavior", CUDA Runtime API: a copy from device to pageable host memory
             returns only once it has completed), so such copies go through the helpers that take
             a pinned staging buffer (struct sdc_cuda_pinned, made only in cuda_util.cu)
  stream     work on the legacy default stream (a launch without a stream, stream 0 / NULL /
             cudaStreamLegacy / cudaStreamPerThread, or the C++ API's defaulted stream argument), and
             a stream made without cudaStreamNonBlocking: such work is ordered against the module's
             non-blocking streams only by accident (issue 28's stale-operand upload)
  pinned     a struct sdc_cuda_pinned filled outside cuda_util.cu (it would let pageable memory past
             the host-copy rule)

usage: wait_lint.py FILE_OR_DIR...   (a directory: its *.cu and *.h)
       wait_lint.py --self-test      (only the canaries below)
Every run first lints built-in canaries: each rule must fire where it should and nowhere else, so
a rule that stopped seeing what it seeks fails the lint itself.
"""
import os
import re
import sys

SYNC = {
    'cudaDeviceSynchronize', 'cudaStreamSynchronize', 'cudaEventSynchronize', 'cudaThreadSynchronize',
    'cudaDeviceReset', 'cudaThreadExit', 'cudaMemcpy', 'cudaMemcpy2D', 'cudaMemcpy3D', 'cudaMemcpyPeer',
    'cudaMemcpy3DPeer', 'cudaMemcpyToSymbol', 'cudaMemcpyFromSymbol', 'cudaMemcpyToArray',
    'cudaMemcpyFromArray', 'cudaMemcpy2DToArray', 'cudaMemcpy2DFromArray', 'cudaMemset', 'cudaMemset2D',
    'cudaMemset3D', 'cudaDeviceSetLimit', 'cudaDeviceSetCacheConfig', 'cudaStreamAttachMemAsync',
    'cudaGraphLaunch',  # (none used; a graph's work would need its own polled wait)
    'cublasGetVector', 'cublasSetVector', 'cublasGetMatrix', 'cublasSetMatrix',
}
FREE = {'cudaFree', 'cudaFreeHost', 'cudaFreeArray', 'cudaFreeMipmappedArray', 'cublasDestroy', 'cublasDestroy_v2',
        'cublasLtDestroy', 'cudaHostUnregister', 'cudaMallocManaged', 'cudaHostRegister'}
# call -> the (file, function) pairs allowed to make it
SANCTIONED = {
    'cudaFreeAsync': {('cuda_util.cu', 'sdc_cuda_free')},
    'cudaMallocAsync': {('cuda_util.cu', 'sdc_cuda_malloc')},
    'cudaMalloc': {('cuda_util.cu', 'sdc_cuda_malloc')},  # (a GPU without the stream-ordered allocator)
    'cudaMallocPitch': set(),
    'cudaMalloc3D': set(),
    'cudaMallocHost': {('cuda_util.cu', 'sdc_cuda_pinned_get')},
    'cudaHostAlloc': {('cuda_util.cu', 'sdc_cuda_pinned_get')},
    'cudaEventQuery': {('cuda_util.cu', 'sdc_cuda_poll'), ('cuda_util.cu', 'sdc_cuda_settle')},
    # (nccl.cu's sdc_nccl_drain polls every member's stream and NCCL's async error to its deadline)
    'cudaStreamQuery': {('cuda_util.cu', 'sdc_cuda_idle'), ('nccl.cu', 'sdc_nccl_drain')},
}
# the helper allowed each host copy
HOST_COPY = {'cudaMemcpyAsync': 3, 'cudaMemcpy2DAsync': 6, 'cudaMemcpy3DAsync': None, 'cudaMemcpyPeerAsync': None,
             'cudaMemcpyToSymbolAsync': 4, 'cudaMemcpyFromSymbolAsync': 4, 'cudaMemcpy2DToArrayAsync': None,
             'cudaMemcpy2DFromArrayAsync': None}
HOST_COPY_OK = {('cuda_util.cu', 'sdc_cuda_to_device'), ('cuda_util.cu', 'sdc_cuda_from_device'),
                ('cuda_util.cu', 'sdc_cuda_from_device_2d')}
# call -> the index of its stream argument (the C++ API defaults most of them to 0)
STREAM_ARG = {'cudaMemcpyAsync': 4, 'cudaMemcpy2DAsync': 7, 'cudaMemcpy3DAsync': 1, 'cudaMemcpyPeerAsync': 5,
              'cudaMemcpyToSymbolAsync': 5, 'cudaMemcpyFromSymbolAsync': 5, 'cudaMemsetAsync': 3,
              'cudaMemset2DAsync': 5, 'cudaMemset3DAsync': 3, 'cudaMallocAsync': 2, 'cudaFreeAsync': 1,
              'cudaEventRecord': 1, 'cudaEventRecordWithFlags': 1, 'cudaStreamWaitEvent': 0,
              'cudaLaunchKernel': 5, 'cudaLaunchCooperativeKernel': 5, 'cublasSetStream': 1,
              'cublasSetStream_v2': 1, 'cudaLaunchHostFunc': 0, 'cudaMemPrefetchAsync': 3, 'cublasLtMatmul': 15}
LEGACY = {'0', 'NULL', 'nullptr', 'cudaStreamLegacy', 'cudaStreamPerThread', '(cudaStream_t)0'}
# a sanctioned call that its helper may make only after testing the GPU's hung flag
GUARDED = {'cudaFreeAsync': 'sdc_cuda_is_hung'}

IDENT = re.compile(r'[A-Za-z_]\w*')


def strip(src):
    """Comments, string and character literals blanked (newlines kept: line numbers hold)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith('//', i):
            j = src.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif src.startswith('/*', i):
            j = src.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', src[i:j]))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r'[^\n]', ' ', src[i + 1:j - 1]) + c if j - i >= 2 else src[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def directives(text):
    """Spans of preprocessor directives (with their continuation lines): (start, end, macro name)."""
    spans = []
    for m in re.finditer(r'(?m)^[ \t]*#', text):
        end = m.start()
        while True:
            nl = text.find('\n', end)
            if nl < 0:
                end = len(text)
                break
            if text[nl - 1] == '\\':
                end = nl + 1
                continue
            end = nl
            break
        d = re.match(r'[ \t]*#[ \t]*define[ \t]+(\w+)', text[m.start():end])
        spans.append((m.start(), end, '<macro %s>' % d.group(1) if d else '<directive>'))
    return spans


def functions(text, skip):
    """Top-level brace blocks: (start, end, name); name is the function's, or None (a struct, an
    initialiser). Directive spans are skipped."""
    blocks, depth, start, i = [], 0, 0, 0
    skip_at = {s: e for s, e, _ in skip}
    while i < len(text):
        if i in skip_at:
            i = skip_at[i]
            continue
        c = text[i]
        if c == '{':
            if depth == 0:
                start = i
            depth += 1
        elif c == '}':
            depth -= 1
            if depth == 0:
                blocks.append((start, i + 1, function_name(text, start)))
        i += 1
    return blocks


def function_name(text, brace):
    j = brace - 1
    while j >= 0 and text[j].isspace():
        j -= 1
    if j < 0 or text[j] != ')':
        return None
    depth = 0
    while j >= 0:
        if text[j] == ')':
            depth += 1
        elif text[j] == '(':
            depth -= 1
            if depth == 0:
                break
        j -= 1
    m = re.search(r'([A-Za-z_]\w*)\s*$', text[:j])
    if not m or m.group(1) in ('if', 'for', 'while', 'switch', 'return', 'sizeof'):
        return None
    return m.group(1)


def args_of(text, open_paren):
    """The top-level arguments of the call whose '(' is at open_paren, and the index past ')'."""
    depth, cur, out, i = 0, [], [], open_paren
    while i < len(text):
        c = text[i]
        if c in '([{':
            depth += 1
            if depth > 1:
                cur.append(c)
        elif c in ')]}':
            depth -= 1
            if depth == 0:
                out.append(''.join(cur).strip())
                return [a for a in out if a or len(out) > 1], i + 1
            cur.append(c)
        elif c == ',' and depth == 1:
            out.append(''.join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    return out, i


def lint_text(name, src):
    """Findings: (line, function, rule, message)."""
    base = os.path.basename(name)
    text = strip(src)
    dirs = directives(text)
    blocks = functions(text, dirs)

    def where(pos):
        for s, e, macro in dirs:
            if s <= pos < e:
                return macro
        for s, e, fn in blocks:
            if s <= pos < e:
                return fn or '<file scope>'
        return '<file scope>'

    def line(pos):
        return text.count('\n', 0, pos) + 1

    found = []

    def add(pos, fn, rule, msg):
        found.append((line(pos), fn, rule, msg))

    for m in re.finditer(r'(?<![\w.>])([A-Za-z_]\w*)\s*\(', text):
        call, pos = m.group(1), m.start(1)
        fn = where(pos)
        # a declaration or definition of the name itself is not a call
        before = text[max(0, pos - 40):pos]
        if re.search(r'(cudaError_t|CUDARTAPI|cublasStatus_t)\s*$', before):
            continue
        args, _ = args_of(text, m.end() - 1)
        if call in SYNC:
            add(pos, fn, 'sync', '%s waits with no deadline' % call)
        if call in FREE:
            add(pos, fn, 'free', '%s can wait for the whole device (a hung kernel of any lane: forever)' % call)
        if call in SANCTIONED and (base, fn) not in SANCTIONED[call]:
            ok = ', '.join(f for _, f in sorted(SANCTIONED[call])) or 'nothing'
            add(pos, fn, 'helper', '%s outside its helper (%s)' % (call, ok))
        if call in GUARDED and (base, fn) in SANCTIONED[call]:
            s, e = next(((s, e) for s, e, f in blocks if f == fn), (pos, pos))
            guard = GUARDED[call]
            k = text.find(guard + '(', s, e)
            if k < 0 or k > pos:
                add(pos, fn, 'helper', '%s before the hung flag is tested (%s)' % (call, guard))
        if call in HOST_COPY:
            k = HOST_COPY[call]
            kind = args[k] if k is not None and k < len(args) else ''
            if kind != 'cudaMemcpyDeviceToDevice' and (base, fn) not in HOST_COPY_OK:
                add(pos, fn, 'host-copy', '%s of kind %s: host memory only through the pinned-staging helpers'
                    % (call, kind or '?'))
        if call in STREAM_ARG:
            k = STREAM_ARG[call]
            if k >= len(args):
                add(pos, fn, 'stream', '%s without a stream: the legacy default stream' % call)
            elif args[k].replace(' ', '') in LEGACY:
                add(pos, fn, 'stream', '%s on stream %s: the legacy default stream' % (call, args[k]))
        if call == 'cudaStreamCreate':
            add(pos, fn, 'stream', 'cudaStreamCreate makes a blocking stream: cudaStreamCreateWithFlags(..., cudaStreamNonBlocking)')
        if call == 'cudaStreamCreateWithFlags' and (len(args) < 2 or 'cudaStreamNonBlocking' not in args[1]):
            add(pos, fn, 'stream', 'a stream made without cudaStreamNonBlocking')
    for m in re.finditer(r'<<<(.*?)>>>', text, re.S):
        cfg = [a.strip() for a in args_of('(' + m.group(1) + ')', 0)[0]]
        if len(cfg) < 4 or cfg[3].replace(' ', '') in LEGACY:
            add(m.start(), where(m.start()), 'stream', 'a launch on the legacy default stream (<<<%s>>>)' % m.group(1).strip())
    if base != 'cuda_util.cu':
        for m in re.finditer(r'(\.|->)\s*p\s*=(?!=)|struct\s+sdc_cuda_pinned\s+\w+(\s*\[[^]]*\])?\s*=\s*\{', text):
            # .p assignments count only where the object is a pinned buffer: the name before them
            # is looked at loosely (any x.p = / x->p = outside cuda_util.cu is suspect)
            add(m.start(), where(m.start()), 'pinned', 'a pinned staging buffer filled outside cuda_util.cu')
    return found


# Canaries: (file name, source, the rules it must raise, in order of lines). The good ones must
# raise nothing. Each names the behaviour it stands for.
CANARIES = [
    ('a.cu', 'void f(float *d, float *h, cudaStream_t s) { cudaMemcpy(h, d, 4, cudaMemcpyDeviceToHost); }', ['sync']),
    ('a.cu', 'void f(cudaStream_t s) { cudaStreamSynchronize(s); }', ['sync']),
    ('a.cu', 'void f() {\n cudaDeviceSynchronize();\n}', ['sync']),
    ('a.cu', 'void f(cudaEvent_t e) { cudaEventSynchronize(e); }', ['sync']),
    ('a.cu', 'void f(void *d) { cudaMemset(d, 0, 4); }', ['sync']),
    ('a.cu', 'void f(void *d) { if (d) cudaFree(d); }', ['free']),
    ('a.cu', 'void f(void *h) { cudaFreeHost(h); }', ['free']),
    ('a.cu', 'void f(cublasLtHandle_t h) { cublasLtDestroy(h); }', ['free']),
    ('a.cu', 'void f(cublasHandle_t h) { cublasDestroy(h); }', ['free']),
    ('a.cu', 'void f(void *d, cudaStream_t s) { cudaFreeAsync(d, s); }', ['helper']),
    ('a.cu', 'void f(void **d) { cudaMalloc(d, 4); }', ['helper']),
    ('a.cu', 'void f(void **h) { cudaMallocHost(h, 4); }', ['helper']),
    ('a.cu', 'int f(cudaEvent_t e) { while (cudaEventQuery(e) == cudaErrorNotReady) ; return 0; }', ['helper']),
    ('cuda_util.cu', 'void sdc_cuda_free(int dev, void *d, cudaStream_t s) { cudaFreeAsync(d, s); }', ['helper']),
    ('a.cu', 'void f(float *h, float *d, cudaStream_t s) {\n cudaMemcpyAsync(h, d, 4, cudaMemcpyDeviceToHost, s);\n}',
     ['host-copy']),
    ('a.cu', 'void f(float *h, float *d, cudaStream_t s) { cudaMemcpyAsync(d, h, 4, cudaMemcpyHostToDevice, s); }',
     ['host-copy']),
    ('a.cu', 'void f(float *h, float *d, int w, cudaStream_t s) {\n'
     ' cudaMemcpyAsync(h, d, 4, w ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s); }', ['host-copy']),
    ('a.cu', 'void f(char *h, char *d, cudaStream_t s) { cudaMemcpy2DAsync(h, 1, d, 8, 1, 4, cudaMemcpyDeviceToHost, s); }',
     ['host-copy']),
    ('a.cu', 'void f(float *a, float *b) { cudaMemcpyAsync(a, b, 4, cudaMemcpyDeviceToDevice); }', ['stream']),
    ('a.cu', 'void f(float *a, float *b) { cudaMemsetAsync(a, 0, 4, 0); }', ['stream']),
    ('a.cu', 'void f(cudaEvent_t e) { cudaEventRecord(e); }', ['stream']),
    ('a.cu', '__global__ void k(int *p) {}\nvoid f(int *p) { k<<<1, 32>>>(p); }', ['stream']),
    ('a.cu', '__global__ void k(int *p) {}\nvoid f(int *p) { k<<<1, 32, 0, NULL>>>(p); }', ['stream']),
    ('a.cu', 'void f(cudaStream_t *s) { cudaStreamCreate(s); }', ['stream']),
    ('a.cu', 'void f(cublasLtHandle_t h) {\n cublasLtMatmul(h, op, a, A, la, B, lb, b, C, lc, D, ld, algo, ws, 0, 0);\n}',
     ['stream']),
    ('a.cu', 'void f(cudaStream_t *s) { cudaStreamCreateWithFlags(s, cudaStreamDefault); }', ['stream']),
    ('a.cu', 'void f(struct sdc_cuda_pinned *h, void *b) { h->p = (uint8_t *)b; }', ['pinned']),
    ('a.cu', 'void f(void *b) { struct sdc_cuda_pinned h = { (uint8_t *)b, 4 }; }', ['pinned']),
    ('a.cu', '#define FREE_ALL(x) do { cudaFree(x); } while (0)\n', ['free']),
    # good: none of these may raise anything
    ('a.cu', '/* cudaFree(x) and cudaDeviceSynchronize() in a comment */ void f() { const char *t = "cudaFree(x)"; }', []),
    ('a.cu', '__global__ void k(int *p) {}\nvoid f(int *p, cudaStream_t s) { k<<<1, 32, 0, s>>>(p); }', []),
    ('a.cu', 'void f(float *a, float *b, cudaStream_t s) { cudaMemcpyAsync(a, b, 4, cudaMemcpyDeviceToDevice, s); }', []),
    ('a.cu', 'void f(cudaStream_t *s) { cudaStreamCreateWithFlags(s, cudaStreamNonBlocking); }', []),
    ('a.cu', 'void f(cudaStream_t s, cudaEvent_t e) { cudaEventRecord(e, s); cudaStreamDestroy(s); }', []),
    ('cuda_util.cu', 'void sdc_cuda_free(int dev, void *d, cudaStream_t s) {\n if (sdc_cuda_is_hung(dev)) return;\n'
     ' cudaFreeAsync(d, s);\n}', []),
    ('cuda_util.cu', 'cudaError_t sdc_cuda_from_device(struct sdc_cuda_pinned *h, size_t off, const void *d, size_t n,'
     ' cudaStream_t s) { return cudaMemcpyAsync(h->p + off, d, n, cudaMemcpyDeviceToHost, s); }', []),
    ('a.cu', 'void f(struct sdc_cuda_pinned *h, int *x) { memcpy(x, h->p, 4); if (h->p == NULL) return; }', []),
]


def self_test():
    bad = 0
    for name, src, want in CANARIES:
        got = [r for _, _, r, _ in lint_text(name, src)]
        if got != want:
            print('FAIL: the lint\'s own canary %r gave %s, not %s' % (src[:90], got or 'nothing', want or 'nothing'))
            bad += 1
    return bad


def main(argv):
    if self_test():
        return 1
    if argv[1:] == ['--self-test']:
        print('PASS: %d canaries' % len(CANARIES))
        return 0
    paths = []
    for a in argv[1:]:
        if os.path.isdir(a):
            paths += sorted(os.path.join(a, f) for f in os.listdir(a) if f.endswith(('.cu', '.h')))
        else:
            paths.append(a)
    if not paths:
        print('usage: wait_lint.py FILE_OR_DIR... | --self-test', file=sys.stderr)
        return 2
    total = 0
    for p in paths:
        with open(p, encoding='utf-8') as f:
            src = f.read()
        for ln, fn, rule, msg in lint_text(p, src):
            print('%s:%d: %s: [%s] %s' % (p, ln, fn, rule, msg))
            total += 1
    if total:
        print('FAIL: %d unbounded waits or unsafe frees/copies in %d files' % (total, len(paths)))
        return 1
    print('PASS: %d files, %d canaries: every wait on a GPU is polled to a deadline' % (len(paths), len(CANARIES)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
