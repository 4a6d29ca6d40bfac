"""Query a running `spindle serve` from Python: python3 query.py HOST:PORT TOKEN_FILE"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import spindle_client as sc  # noqa: E402


async def main(endpoint, token_file):
    async with sc.connect(endpoint, token_file=token_file) as c:
        r = await c.infer_gnn("sage", [0, 1, 2], sampler_seed=7)
        for seed, row in zip([0, 1, 2], r.outputs):
            print(seed, [round(x, 4) for x in row])
        await c.set_tunable("sage", "max_batch", 16)       # live, no restart
        s = await c.stats()
        print("requests", s["models"]["sage"]["requests"], "max_batch",
              s["models"]["sage"]["tunables"]["max_batch"])


sc.run(main(sys.argv[1], sys.argv[2]))
