#!/usr/bin/env python3
"""packaging/container without building the image: what a cluster and the image's scripts rely on.

- sdcscan-daemonset.yaml: the node agent (sdcscan-agent) with the node's state folder, a textfile
  folder that SDCSCAN_AGENT_PROM writes into, /sys and /dev/kmsg under SDCSCAN_HOST_ROOT (EDAC,
  the kernel log), every device (privileged: /dev/nvidia*), NVIDIA's runtime for the driver's
  libraries, the node's hostname (hostNetwork), no CPU limit, the image of this version.
- node-problem-detector.yaml: its ConfigMap holds packaging/npd/sdcscan-plugin.json unchanged;
  the plugin's flag names the ConfigMap's mount; each rule's script and SDCSCAN's wrapper are
  where sdcscan-npd-export writes them inside the emptyDir that the init container fills and NPD
  mounts; the node's state read-only; the ServiceAccount bound to system:node-problem-detector.
- sdcscan-agent, with a stand-in sdcscan that records its calls: the default options and --prom;
  the run's exit is the agent's in one round; a run killed without a verdict gets status --prom;
  a fresh last.json waits out the interval; SIGTERM reaches the scan and the agent exits 143.
- sdcscan-npd-export, with this build's sdcscan: the layout above, and the wrapper answering
  `status` with no library path; as root, also in an empty root holding nothing else (chroot).

usage: container_files.py SOURCE_ROOT SDCSCAN CHECK_SDCSCAN_SH VERSION
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import yaml

SRC, SDCSCAN, CHECK_SH, VERSION = sys.argv[1:5]
CT = os.path.join(SRC, "packaging", "container")
failed = []


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    failed.append(msg)


def docs(name):
    with open(os.path.join(CT, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def one(ds, kind, name=None):
    got = [d for d in ds if d.get("kind") == kind and (name is None or d["metadata"]["name"] == name)]
    if len(got) != 1:
        fail("%s %s: %d of them" % (kind, name or "", len(got)))
        return {}
    return got[0]


def env_of(c):
    return {e["name"]: e.get("value") for e in c.get("env", [])}


def host_mounts(pod, c):
    """mountPath -> (hostPath path or volume kind, readOnly) of container c."""
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    out = {}
    for m in c.get("volumeMounts", []):
        v = vols.get(m["name"], {})
        src = v["hostPath"]["path"] if "hostPath" in v else ("emptyDir:" + m["name"] if "emptyDir" in v else
                                                              "configMap:" + v.get("configMap", {}).get("name", "?"))
        out[m["mountPath"]] = (src, bool(m.get("readOnly")))
    return out


def check_daemonset():
    ds = one(docs("sdcscan-daemonset.yaml"), "DaemonSet", "sdcscan")
    if not ds:
        return
    pod = ds["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    if not pod.get("hostNetwork"):
        fail("daemonset: no hostNetwork: reports would name the pod, not the node")
    if not c.get("securityContext", {}).get("privileged"):
        fail("daemonset: not privileged: no /dev/nvidia*, no /dev/kmsg")
    if pod.get("runtimeClassName") != "nvidia" or env_of(c).get("NVIDIA_VISIBLE_DEVICES") != "all":
        fail("daemonset: not NVIDIA's runtime with every GPU visible")
    if c.get("command") != ["/usr/local/bin/sdcscan-agent"] or "--if-idle" not in c.get("args", []):
        fail("daemonset: not sdcscan-agent ... --if-idle: %r %r" % (c.get("command"), c.get("args")))
    if "cpu" in c.get("resources", {}).get("limits", {}):
        fail("daemonset: a CPU limit throttles the scan")
    if c["image"].rsplit(":", 1)[-1] != VERSION:
        fail("daemonset: image %s is not version %s" % (c["image"], VERSION))
    mounts = host_mounts(pod, c)
    if mounts.get("/var/lib/sdcscan", ("", True)) != ("/var/lib/sdcscan", False):
        fail("daemonset: the node's /var/lib/sdcscan is not mounted writable at /var/lib/sdcscan")
    root = env_of(c).get("SDCSCAN_HOST_ROOT", "")
    for host, inside in [("/sys", root + "/sys"), ("/dev/kmsg", root + "/dev/kmsg")]:
        if not root or mounts.get(inside, ("",))[0] != host:
            fail("daemonset: the node's %s is not at SDCSCAN_HOST_ROOT%s (%s)" % (host, host, inside))
    prom = env_of(c).get("SDCSCAN_AGENT_PROM", "")
    folder = os.path.dirname(prom)
    if not prom or not mounts.get(folder, ("",))[0].startswith("/") or mounts[folder][1]:
        fail("daemonset: SDCSCAN_AGENT_PROM %r is not in a writable host folder (node_exporter's)" % prom)


def check_npd(export_dir):
    ds = docs("node-problem-detector.yaml")
    cm = one(ds, "ConfigMap")
    d = one(ds, "DaemonSet", "node-problem-detector")
    sa = one(ds, "ServiceAccount")
    crb = one(ds, "ClusterRoleBinding")
    if not (cm and d and sa and crb):
        return
    with open(os.path.join(SRC, "packaging", "npd", "sdcscan-plugin.json")) as f:
        shipped = json.load(f)
    key = "sdcscan-plugin.json"
    plugin = json.loads(cm["data"].get(key, "{}"))
    if plugin != shipped:
        fail("npd: the ConfigMap's %s differs from packaging/npd/sdcscan-plugin.json" % key)
    pod = d["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    (init,) = pod["initContainers"]
    mounts = host_mounts(pod, c)
    cfg = [p for p, (s, _) in mounts.items() if s == "configMap:" + cm["metadata"]["name"]]
    if len(cfg) != 1 or "--config.custom-plugin-monitor=%s/%s" % (cfg[0], key) not in c.get("command", []):
        fail("npd: --config.custom-plugin-monitor does not name the ConfigMap's mount: %r" % c.get("command"))
    imounts = host_mounts(pod, init)
    if len(imounts) != 1 or len(init.get("command", [])) != 2 or \
            init["command"][0] != "/usr/local/bin/sdcscan-npd-export":
        fail("npd: the init container is not sdcscan-npd-export into one volume: %r" % init.get("command"))
        return
    ((ipath, (ivol, _)),) = imounts.items()
    if init["command"][1] != ipath or not ivol.startswith("emptyDir:"):
        fail("npd: sdcscan-npd-export does not write its emptyDir's mount (%s)" % ipath)
    tools = [p for p, (s, _) in mounts.items() if s == ivol]
    if len(tools) != 1:
        fail("npd: NPD's container does not mount the init container's emptyDir")
        return
    # what NPD runs must be where the export put it, relative to the emptyDir
    wanted = [r["path"] for r in plugin.get("rules", [])] + [env_of(c).get("SDCSCAN") or "(SDCSCAN unset)"]
    for p in sorted(set(wanted)):
        rel = os.path.relpath(p, tools[0])
        if rel.startswith("..") or not os.access(os.path.join(export_dir, rel), os.X_OK):
            fail("npd: %s is not an executable that sdcscan-npd-export writes under %s" % (p, tools[0]))
    if mounts.get("/var/lib/sdcscan") != ("/var/lib/sdcscan", True):
        fail("npd: the node's /var/lib/sdcscan is not mounted read-only")
    if pod.get("serviceAccountName") != sa["metadata"]["name"] or \
            crb["roleRef"]["name"] != "system:node-problem-detector" or \
            crb["subjects"][0]["name"] != sa["metadata"]["name"]:
        fail("npd: the ServiceAccount is not bound to system:node-problem-detector")
    sdc = one(docs("sdcscan-daemonset.yaml"), "DaemonSet", "sdcscan")
    if sdc and init["image"] != sdc["spec"]["template"]["spec"]["containers"][0]["image"]:
        fail("npd: the init container's image is not the DaemonSet's")


STUB = """#!/bin/sh
echo "$*" >>"$STUB_LOG"
case $1 in
run)
	trap 'echo TERM >>"$STUB_LOG"; exit 3' TERM
	i=0
	while [ $i -lt "${STUB_SECONDS:-0}" ]; do sleep 1; i=$((i + 1)); done
	exit "${STUB_RC:-0}" ;;
esac
exit 0
"""


def agent(tmp, extra_env, args=(), wait=True):
    env = {"PATH": os.environ["PATH"], "SDCSCAN": os.path.join(tmp, "stub"), "STUB_LOG": os.path.join(tmp, "log"),
           "SDCSCAN_STATE_DIR": os.path.join(tmp, "state"), "SDCSCAN_AGENT_PROM": os.path.join(tmp, "m", "s.prom")}
    env.update(extra_env)
    open(env["STUB_LOG"], "w").close()
    # (umask 077: the metrics folder must still be one node_exporter's user can enter)
    p = subprocess.Popen(["sh", os.path.join(CT, "sdcscan-agent")] + list(args), env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=lambda: os.umask(0o077))
    if wait:
        p.wait(timeout=30)
    return p


def log(tmp):
    with open(os.path.join(tmp, "log")) as f:
        return f.read().splitlines()


def check_agent():
    tmp = tempfile.mkdtemp()
    try:
        with open(os.path.join(tmp, "stub"), "w") as f:
            f.write(STUB)
        os.chmod(os.path.join(tmp, "stub"), 0o755)
        os.makedirs(os.path.join(tmp, "state"))
        prom = os.path.join(tmp, "m", "s.prom")
        p = agent(tmp, {"SDCSCAN_AGENT_ONCE": "1", "STUB_RC": "2"})
        if p.returncode != 2 or log(tmp) != ["run --profile cron --if-idle --wait 600 --prom " + prom]:
            fail("agent, one round: exit %s, calls %r" % (p.returncode, log(tmp)))
        if not os.path.isdir(os.path.dirname(prom)) or os.stat(os.path.dirname(prom)).st_mode & 0o777 != 0o755:
            fail("agent: the metrics folder was not made 0755")
        p = agent(tmp, {"SDCSCAN_AGENT_ONCE": "1", "STUB_RC": "137"}, ["--profile", "quick"])
        if p.returncode != 137 or log(tmp) != ["run --profile quick --prom " + prom, "status --prom " + prom]:
            fail("agent, a run without a verdict: exit %s, calls %r (no status --prom?)" % (p.returncode, log(tmp)))
        # a fresh last.json (a restarted pod): no scan before the interval is out; TERM ends the wait
        open(os.path.join(tmp, "state", "last.json"), "w").close()
        p = agent(tmp, {"SDCSCAN_AGENT_INTERVAL": "100", "SDCSCAN_AGENT_SPLAY": "0"}, wait=False)
        time.sleep(1.5)
        t0 = time.time()
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=10)
        out = p.stdout.read()
        if p.returncode != 143 or log(tmp) or "next in" not in out or time.time() - t0 > 3:
            fail("agent after a fresh scan: exit %s, calls %r, said %r" % (p.returncode, log(tmp), out))
        os.unlink(os.path.join(tmp, "state", "last.json"))
        # TERM during a scan reaches the scan, which ends; the agent exits 143
        p = agent(tmp, {"SDCSCAN_AGENT_SPLAY": "0", "STUB_SECONDS": "30"}, wait=False)
        time.sleep(1.5)
        t0 = time.time()
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=10)
        if p.returncode != 143 or log(tmp)[-1:] != ["TERM"] or time.time() - t0 > 4:
            fail("agent stopped mid-scan: exit %s in %.1f s, calls %r" % (p.returncode, time.time() - t0, log(tmp)))
    finally:
        shutil.rmtree(tmp)


def check_export(tmp):
    share = os.path.join(tmp, "share")
    os.makedirs(os.path.join(share, "npd"))
    shutil.copy(CHECK_SH, os.path.join(share, "npd", "check-sdcscan.sh"))
    shutil.copy(os.path.join(SRC, "packaging", "npd", "sdcscan-plugin.json"), os.path.join(share, "npd"))
    out = os.path.join(tmp, "export")
    r = subprocess.run(["sh", os.path.join(CT, "sdcscan-npd-export"), out], capture_output=True, text=True,
                       env=dict(os.environ, SDCSCAN=SDCSCAN, SDCSCAN_SHARE=share))
    if r.returncode != 0:
        fail("sdcscan-npd-export: exit %d: %s" % (r.returncode, r.stderr))
        return out
    state = os.path.join(tmp, "state")
    os.makedirs(state)
    # no result yet: UNKNOWN (3), through the wrapper, with no library path of the caller's; the
    # loader's own account (ld.so(8): LD_DEBUG=libs) says each library came from the export
    wrapper = os.path.join(out, "status", "sdcscan")
    try:
        r = subprocess.run([wrapper, "status"], capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin", "SDCSCAN_STATE_DIR": state, "LD_DEBUG": "libs"})
    except OSError as e:
        fail("the exported wrapper %s: %s" % (wrapper, e))
        return out
    if r.returncode != 3 or "UNKNOWN" not in r.stdout:
        fail("the exported sdcscan status: exit %d: %s %s" % (r.returncode, r.stdout, r.stderr[-500:]))
    inits = [ln.split("calling init:")[1].strip() for ln in r.stderr.splitlines() if "calling init:" in ln]
    lib = os.path.join(out, "status", "lib")
    # (the wrapper's sh comes first, with the system's loader and libc; it then execs the export's)
    starts = [i for i, p in enumerate(inits) if p.startswith(lib + "/ld-")]
    inits = inits[starts[0]:] if starts else []
    foreign = [p for p in inits if os.path.dirname(p) != lib]
    if not inits or foreign:
        fail("the exported sdcscan loads libraries from outside the export: %s" % (foreign or "none seen"))
    if os.getuid() != 0:
        print("container_files: not root: the exported tool is not tried in an empty root (chroot)")
        return out
    root = os.path.join(tmp, "root")
    shutil.copytree(out, os.path.join(root, "x"), symlinks=True)
    os.makedirs(os.path.join(root, "state"))
    lib = os.path.join("/x", "status", "lib")
    loader = [f for f in os.listdir(os.path.join(root, "x", "status", "lib")) if f.startswith("ld-")][0]
    # (an ASan build reads its options from /proc and LeakSanitizer walks /proc at exit: an empty
    # root has no /proc, so that build is not tried there; the main build is)
    syms = subprocess.run(["readelf", "-sW", SDCSCAN], capture_output=True, text=True).stdout
    if "__asan_init" in syms:
        print("container_files: a sanitizer build: the exported tool is not tried in an empty root (no /proc)")
        return out
    r = subprocess.run([shutil.which("chroot") or "/usr/sbin/chroot", root, os.path.join(lib, loader), "--library-path", lib, "/x/status/bin/sdcscan",
                        "status"], capture_output=True, text=True, env={"SDCSCAN_STATE_DIR": "/state"})
    if r.returncode != 3 or "UNKNOWN" not in r.stdout:
        fail("the exported sdcscan status in an empty root: exit %d: %s %s" % (r.returncode, r.stdout, r.stderr))
    return out


def main():
    tmp = tempfile.mkdtemp()
    try:
        check_daemonset()
        export_dir = check_export(tmp)
        check_npd(export_dir)
        check_agent()
    finally:
        shutil.rmtree(tmp)
    for sh in ["build-image.sh", "sdcscan-agent", "sdcscan-npd-export"]:
        r = subprocess.run(["sh", "-n", os.path.join(CT, sh)], capture_output=True, text=True)
        if r.returncode != 0:
            fail("%s: %s" % (sh, r.stderr))
    print("container_files: %s" % ("passed" if not failed else "%d FAILED" % len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
