"""Python client of Spindle's Cap'n Proto front door (schema: spindle.capnp).

Blocking (numpy in and out):

    from spindle_client import Client
    with Client("127.0.0.1:7400", model="sage") as c:
        out = c.infer_gnn([1, 2, 3])    # float32 array [3, width]

asyncio:

    import spindle_client as sc

    async def main():
        async with sc.connect("127.0.0.1:7400", token_file="admin.token") as c:
            r = await c.infer_gnn("sage", [1, 2, 3])
            print(r.outputs)            # one list of floats per seed
            print(await c.stats())      # dict

    sc.run(main())                      # scripts; in a notebook: await sc.start(main())
"""
from .blocking import Client
from .client import AsyncClient, GnnResult, RecResult, SpindleError, connect, run, start

__all__ = ["AsyncClient", "Client", "GnnResult", "RecResult", "SpindleError", "connect", "run",
           "start"]
