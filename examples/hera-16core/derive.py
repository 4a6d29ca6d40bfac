"""Derives a 16-core, 11-LLC-way profile table (Hera Table II's server) for the
eight models of Hera Table I from what the paper states about them, for
`spindle colocate simulate`. Not a measurement: every number below is a shape
parameter chosen to match a sentence of Hera §V-B (quoted beside it), with
QPS normalised to 1,000 for one worker at all ways. Run: python3 derive.py > profile.json
"""
import json

CORES, WAYS, SYSTEM_BW = 16, 11, 68.0  # Table II: 16 cores, 11 ways; ~68 GB/s socket DRAM

# name: (SLA ms, saturation workers, max workers, cache sensitivity, GB/s per worker)
MODELS = {
    # "DLRM(D) ... completely bottlenecked on memory bandwidth, whose aggregated
    # bandwidth usage saturates beyond 12 workers ... a further 4% from 12 to 16"
    "dlrm_d": (100, 12, 16, 0.05, 5.5),
    # "memory capacity hungry models such as DLRM(B) ... out-of-memory error beyond 8 workers"
    "dlrm_b": (400, 8, 8, 0.10, 2.0),
    # "embedding limited models with high memory bandwidth usage (DLRM(A, D))"
    "dlrm_a": (100, 14, 16, 0.10, 3.5),
    # the remaining five: "high compute intensity and a modest model size ... scalable increase"
    "dlrm_c": (100, 16, 16, 0.20, 1.0),
    "ncf": (5, 16, 16, 0.45, 0.6),    # "cache-sensitive NCF"
    "wnd": (25, 16, 16, 0.25, 0.8),
    "din": (100, 16, 16, 0.30, 1.2),
    "dien": (35, 16, 16, 0.45, 1.0),  # "another cache-sensitive DIEN"
}


def qps(w, k, sat, sens):
    # Linear up to `sat` workers, then 1% per extra worker (DLRM(D)'s "further 4%").
    scale = min(w, sat) + 0.01 * max(0, w - sat)
    # Fewer ways cost a cache-sensitive model up to `sens` of its QPS (quadratic in the
    # ways taken away; Hera Fig. 7's curves fall faster as ways shrink).
    cache = 1.0 - sens * (1.0 - k / WAYS) ** 2
    return round(1000.0 * scale * cache, 1)


def main():
    models = {}
    for name, (sla, sat, top, sens, bw) in MODELS.items():
        models[name] = {
            "sla_ms": sla,
            "percentile": 0.99,
            "qps": [[qps(w, k, sat, sens) for k in range(1, WAYS + 1)] for w in range(1, top + 1)],
            "mem_bw_gbps": [round(min(bw * min(w, sat), SYSTEM_BW), 2) for w in range(1, top + 1)],
            "mem_bw_source": "derived from Hera §V-B (not measured)",
        }
    print(json.dumps({"machine": {"cores": CORES, "llc_ways": WAYS, "mem_bw_gbps": SYSTEM_BW},
                      "models": models}, indent=1))


if __name__ == "__main__":
    main()
