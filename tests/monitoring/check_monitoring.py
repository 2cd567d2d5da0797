#!/usr/bin/env python3
"""Checks the shipped monitoring assets (deploy/monitoring) against the binaries: the
alert rules pass `promtool check rules` and are well-formed, the Grafana dashboard is what make_dashboard.py writes,
and every pagellm / vLLM / router metric an alert or a panel names is one that a live
`pagellm serve` or `pagellm router` exports (histograms by their _bucket series). Host
metrics come from Prometheus's node_exporter and are checked against its names.

    python3 tests/monitoring/check_monitoring.py build/pagellm
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
ASSETS = ROOT / "deploy" / "monitoring"
sys.path.insert(0, str(ROOT / "tests" / "support"))
from checks import Checks  # noqa: E402

sys.path.insert(0, str(ASSETS))
import make_dashboard  # noqa: E402

# node_exporter 1.5 (Debian 12: prometheus-node-exporter) series the assets use.
NODE_EXPORTER = {"node_cpu_seconds_total", "node_pressure_memory_waiting_seconds_total", "node_vmstat_pgmajfault",
                 "node_hwmon_temp_celsius", "up"}
PROMQL_WORDS = {"rate", "increase", "sum", "avg", "max", "min", "by", "without", "and", "or", "unless",
                "histogram_quantile", "le", "instance", "mode", "job", "worker", "idle", "labels", "inf"}


def start(args, ready):
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 60
    for line in p.stdout:
        m = re.search(ready, line)
        if m:
            return p, int(m.group(1))
        if time.time() > deadline:
            break
    p.kill()
    raise RuntimeError(f"{args[1]} did not start")


def get(url, body=None):
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read().decode()


def exported(text):
    names = set()
    for line in text.splitlines():
        if line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def metric_names(expr):
    expr = re.sub(r'"[^"]*"', "", expr)  # label values
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)  # label lists
    names = set()
    for tok in re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", expr):
        if tok not in PROMQL_WORDS:
            names.add(tok)
    return names


def main():
    pagellm = sys.argv[1]
    c = Checks()
    promtool = subprocess.run(["promtool", "check", "rules", str(ASSETS / "pagellm-alerts.yml")], capture_output=True,
                              text=True)
    c(promtool.returncode == 0, f"promtool check rules: {promtool.stdout}{promtool.stderr}")
    rules = yaml.safe_load((ASSETS / "pagellm-alerts.yml").read_text())
    alerts = [r for g in rules["groups"] for r in g["rules"]]
    c(len(rules["groups"]) == 4, "one alert group per layer (host, engine, application, router)")
    c(len({a["alert"] for a in alerts}) == len(alerts), "alert names are unique")
    for a in alerts:
        ok = all(k in a for k in ("alert", "expr", "for", "labels", "annotations")) and \
            a["labels"].get("severity") in ("info", "warning", "critical") and "summary" in a["annotations"]
        c(ok, f"alert {a.get('alert')}: expr, for, severity and summary")
    dashboard = json.loads((ASSETS / "grafana-dashboard.json").read_text())
    c((ASSETS / "grafana-dashboard.json").read_text() == make_dashboard.render(),
            "grafana-dashboard.json is what make_dashboard.py writes")
    exprs = [a["expr"] for a in alerts]
    for p in dashboard["panels"]:
        exprs += [t["expr"] for t in p.get("targets", [])]
    c(any(p["type"] == "heatmap" for p in dashboard["panels"]), "the dashboard has a latency heat map")

    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "model")
        subprocess.run([pagellm, "make-dummy-model", "--preset", "qwen3-tiny", "--out", model], check=True,
                       capture_output=True)
        serve, port = start([pagellm, "serve", model, "--host", "127.0.0.1", "--port", "0", "--kv-cache-memory",
                             str(8 << 20), "--max-model-len", "2048", "--served-model-name", "tiny",
                             "--disable-log-stats"], r"ready on http://[0-9.]+:(\d+)")
        router, rport = start([pagellm, "router", "--host", "127.0.0.1", "--port", "0", "--worker",
                               f"http://127.0.0.1:{port}"], r"ready on http://[0-9.]+:(\d+)")
        try:
            for _ in range(50):
                try:
                    get(f"http://127.0.0.1:{rport}/v1/completions", {"model": "tiny", "prompt": "hi", "max_tokens": 3})
                    break
                except Exception:
                    time.sleep(0.2)
            live = exported(get(f"http://127.0.0.1:{port}/metrics")) | exported(get(f"http://127.0.0.1:{rport}/metrics"))
        finally:
            for p in (router, serve):
                p.terminate()
                p.wait(timeout=30)
    seen = set()
    for e in exprs:
        for name in metric_names(e):
            if name in seen:
                continue
            seen.add(name)
            if ":" in name:
                c(name in live, f"{name} is exported by pagellm serve or router")
            else:
                c(name in NODE_EXPORTER, f"{name} is a node_exporter series")
    c(len(seen) >= 25, f"{len(seen)} distinct series named")
    sys.exit(c.summary())


if __name__ == "__main__":
    main()
