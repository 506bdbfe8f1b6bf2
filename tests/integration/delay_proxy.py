#!/usr/bin/python3
"""A TCP proxy on 127.0.0.1 that delays every chunk by DELAY seconds in each
direction, for remote tests and bench.

    python3 delay_proxy.py UPSTREAM_PORT DELAY_MS [WINDOW_BYTES]  -> prints its own port

Without WINDOW_BYTES a link of latency without a bandwidth limit: the proxy
takes in whatever the sender writes, so one connection moves data as fast
as loopback. With it, each connection and direction has at most
WINDOW_BYTES unacknowledged, like a TCP stream whose receive window is
WINDOW_BYTES on a path of 2 * DELAY round trip: a chunk counts from when
the proxy takes it until DELAY after it is delivered (the ACK's way back),
so one connection moves at most WINDOW_BYTES per round trip. (No slow
start: the full window from the first byte.)
"""
import asyncio
import sys
import time


async def pump(reader, writer, delay, window):
    q = asyncio.Queue()
    loop = asyncio.get_running_loop()
    room = asyncio.Event()
    room.set()
    unacked = 0

    def acked(n):
        nonlocal unacked
        unacked -= n
        if unacked < window:
            room.set()

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
            if window:
                loop.call_later(delay, acked, len(data))
        writer.close()

    t = asyncio.ensure_future(send())
    try:
        while True:
            if window:
                await room.wait()
            data = await reader.read(min(1 << 16, window - unacked) if window else 1 << 16)
            if not data:
                break
            if window:
                unacked += len(data)
                if unacked >= window:
                    room.clear()
            q.put_nowait((time.monotonic() + delay, data))
    except ConnectionError:
        pass
    q.put_nowait((0, None))
    try:
        await t
    except ConnectionError:
        pass


async def main(up_port, delay, window):
    async def conn(r, w):
        try:
            ur, uw = await asyncio.open_connection("127.0.0.1", up_port)
        except OSError:
            w.close()
            return
        await asyncio.gather(pump(r, uw, delay, window), pump(ur, w, delay, window))

    srv = await asyncio.start_server(conn, "127.0.0.1", 0)
    print(srv.sockets[0].getsockname()[1], flush=True)
    async with srv:
        await srv.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2]) / 1000,
                     int(sys.argv[3]) if len(sys.argv) > 3 else 0))
