#!/usr/bin/env python3
"""Writes grafana-dashboard.json: the pagellm fleet dashboard, one row per monitoring
layer (host, engine, application, router). Kept as code so panels stay uniform; run it
after editing and commit both files (tests/monitoring checks the JSON is current).

    python3 deploy/monitoring/make_dashboard.py
"""
import json
import pathlib

LAYERS = [
    ("Host (node_exporter)", [
        ("CPU busy", "1 - avg by (instance) (rate(node_cpu_seconds_total{mode=\"idle\"}[1m]))", "percentunit"),
        ("Memory pressure (PSI, share of time stalled)", "rate(node_pressure_memory_waiting_seconds_total[1m])", "percentunit"),
        ("Major page faults /s", "rate(node_vmstat_pgmajfault[1m])", "short"),
        ("Hottest sensor", "max by (instance) (node_hwmon_temp_celsius)", "celsius"),
    ]),
    ("Engine (pagellm serve)", [
        ("KV cache usage", "vllm:kv_cache_usage_perc", "percentunit"),
        ("Requests running / waiting", "vllm:num_requests_running", "short", "vllm:num_requests_waiting"),
        ("Preemptions /s", "rate(vllm:num_preemptions_total[1m])", "short"),
        ("Prefix-cache hit rate", "rate(vllm:prefix_cache_hits_total[5m]) / rate(vllm:prefix_cache_queries_total[5m])",
         "percentunit"),
        ("Prefill token cap (adaptive)", "pagellm:prefill_token_cap", "short"),
        ("Engine thread time by step phase", "sum by (phase) (rate(pagellm:engine_step_seconds_total[1m]))",
         "percentunit"),
        ("Steps /s", "rate(pagellm:engine_steps_total[1m])", "short"),
        ("Tokens /s (prompt, generated)", "rate(vllm:prompt_tokens_total[1m])", "short",
         "rate(vllm:generation_tokens_total[1m])"),
    ]),
    ("Application (per request)", [
        ("TTFT P50 / P99", "histogram_quantile(0.5, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[1m])))", "s",
         "histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[1m])))"),
        ("ITL P50 / P99", "histogram_quantile(0.5, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket[1m])))", "s",
         "histogram_quantile(0.99, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket[1m])))"),
        ("E2E latency P99", "histogram_quantile(0.99, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket[1m])))", "s"),
        ("Queue time P99", "histogram_quantile(0.99, sum by (le) (rate(vllm:request_queue_time_seconds_bucket[1m])))", "s"),
    ]),
    ("Router (pagellm router)", [
        ("Requests /s by worker", "sum by (worker) (rate(pagellm_router:requests_total[1m]))", "short"),
        ("In flight by worker", "pagellm_router:inflight_requests", "short"),
        ("Workers ready", "sum(pagellm_router:worker_ready)", "short"),
        ("Retries, resumes, client errors /s", "rate(pagellm_router:retries_total[1m])", "short",
         "rate(pagellm_router:resumes_total[1m])", "rate(pagellm_router:client_errors_total[1m])"),
        ("Router-added latency P99", "histogram_quantile(0.99, sum by (le) (rate(pagellm_router:added_latency_seconds_bucket[1m])))",
         "s"),
        ("Estimated prefix-hit rate", "pagellm_router:prefix_hit_rate_estimate", "percentunit"),
    ]),
]


def panel(pid, title, unit, exprs, x, y):
    return {
        "id": pid, "type": "timeseries", "title": title, "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": 8, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [{"refId": chr(ord("A") + i), "expr": e} for i, e in enumerate(exprs)],
    }


def build():
    panels, pid, y = [], 1, 0
    for title, rows in LAYERS:
        panels.append({"id": pid, "type": "row", "title": title, "collapsed": False,
                       "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []})
        pid, y = pid + 1, y + 1
        for i, (name, expr, unit, *more) in enumerate(rows):
            panels.append(panel(pid, name, unit, [expr, *more], (i % 3) * 8, y + (i // 3) * 8))
            pid += 1
        y += ((len(rows) + 2) // 3) * 8
    # The latency heat map: TTFT buckets over time.
    panels.append({
        "id": pid, "type": "heatmap", "title": "TTFT heat map", "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 9, "w": 24, "x": 0, "y": y},
        "targets": [{"refId": "A", "expr": "sum by (le) (increase(vllm:time_to_first_token_seconds_bucket[1m]))",
                     "format": "heatmap", "legendFormat": "{{le}}"}],
        "options": {"calculate": False, "yAxis": {"unit": "s"}},
    })
    return {
        "title": "pagellm fleet", "uid": "pagellm-fleet", "schemaVersion": 39, "version": 1, "editable": True,
        "time": {"from": "now-1h", "to": "now"}, "refresh": "10s", "tags": ["pagellm", "vllm"],
        "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus"}]},
        "panels": panels,
    }


def render():
    return json.dumps(build(), indent=1) + "\n"


if __name__ == "__main__":
    out = pathlib.Path(__file__).with_name("grafana-dashboard.json")
    out.write_text(render())
    print(f"wrote {out}")
