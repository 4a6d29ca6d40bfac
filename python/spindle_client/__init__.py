"""Python client of Spindle's Cap'n Proto front door (schema: spindle.capnp).

    import spindle_client as sc

    async def main():
        async with sc.connect("127.0.0.1:7400", token_file="admin.token") as c:
            r = await c.infer_gnn("sage", [1, 2, 3])
            print(r.outputs)            # one list of floats per seed
            print(await c.stats())      # dict

    sc.run(main())                      # scripts; in a notebook: await sc.start(main())
"""
from .client import (Client, GnnResult, RecResult, SpindleError, connect, run, start)

__all__ = ["Client", "GnnResult", "RecResult", "SpindleError", "connect", "run", "start"]
