#!/usr/bin/python3
"""A TCP proxy on 127.0.0.1 that delays every chunk by DELAY seconds in each
direction (latency without a bandwidth limit), for remote tests and bench.

    python3 delay_proxy.py UPSTREAM_PORT DELAY_MS   -> prints its own port
"""
import asyncio
import sys
import time


async def pump(reader, writer, delay):
    q = asyncio.Queue()

    async def send():
        while True:
            due, data = await q.get()
            if data is None:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    t = asyncio.ensure_future(send())
    try:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                break
            q.put_nowait((time.monotonic() + delay, data))
    except ConnectionError:
        pass
    q.put_nowait((0, None))
    try:
        await t
    except ConnectionError:
        pass


async def main(up_port, delay):
    async def conn(r, w):
        try:
            ur, uw = await asyncio.open_connection("127.0.0.1", up_port)
        except OSError:
            w.close()
            return
        await asyncio.gather(pump(r, uw, delay), pump(ur, w, delay))

    srv = await asyncio.start_server(conn, "127.0.0.1", 0)
    print(srv.sockets[0].getsockname()[1], flush=True)
    async with srv:
        await srv.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2]) / 1000))
