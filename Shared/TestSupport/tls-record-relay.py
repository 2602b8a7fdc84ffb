"""A TLS front for a PostgreSQL server that sends its answers in TLS records of up to 16 KiB.

PostgreSQL 15 writes at most 8 KiB at a time, so each of its TLS records holds at most 8 KiB, and libpq, which reads
into at least 8 KiB of free buffer, always takes a record whole. Poolers and servers that write more at once send
16 KiB records; libpq may then take part of one, and OpenSSL keeps the rest, decrypted, where polling the socket cannot
see it. This relay sends such records, so tests can show that a client waiting on the socket still reads everything.

    python3 tls-record-relay.py <upstream host> <upstream port> <certificate> <key> <watched pid>

It listens on a free loopback port, answers PostgreSQL's SSLRequest with 'S', terminates TLS, and forwards plain
bytes to the upstream server. Answers are gathered until the server pauses, then written at once. It prints
"<port> <pid>" and goes to the background; it exits when the watched process is gone or on SIGTERM.
"""
import os
import select
import socket
import ssl
import struct
import sys
import threading
import time

SSL_REQUEST = struct.pack("!II", 8, 80877103)
LEAD = 7000


def receive_exactly(connection, count):
    data = b""
    while len(data) < count:
        chunk = connection.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed during the SSLRequest")
        data += chunk
    return data


def serve(client, context, upstream_address):
    """One connection, on one thread: OpenSSL must not be used by two threads at once."""
    upstream = None
    try:
        if receive_exactly(client, 8) != SSL_REQUEST:
            return
        client.sendall(b"S")
        client = context.wrap_socket(client, server_side=True)
        upstream = socket.create_connection(upstream_address)
        # Each write goes out at once: with Nagle's algorithm the second of the two writes below waited for the
        # client's delayed acknowledgement of the first (some 40 ms an answer), and a loaded machine ran past the
        # tests' time limit.
        for connection in (client, upstream):
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            # Decrypted input that OpenSSL holds does not show in select().
            ready = [client] if client.pending() else select.select([client, upstream], [], [])[0]
            if client in ready:
                data = client.recv(65536)
                if not data:
                    return
                upstream.sendall(data)
            if upstream in ready:
                data = upstream.recv(1 << 20)
                if not data:
                    return
                # Everything the server sends before a 2 ms pause, in one write: OpenSSL cuts it into 16 KiB records.
                while select.select([upstream], [], [], 0.002)[0]:
                    more = upstream.recv(1 << 20)
                    if not more:
                        break
                    data += more
                # A short record first moves the 16 KiB records' boundaries off the answer's start, as a server that
                # flushed a small first part would: otherwise an answer ending just past a power of two would always
                # end in a tiny record, which libpq takes whole.
                client.sendall(data[:LEAD])
                client.sendall(data[LEAD:])
    except OSError:
        pass
    finally:
        for connection in (client, upstream):
            if connection is not None:
                connection.close()


def watch(pid):
    while True:
        try:
            os.kill(pid, 0)
        except OSError:  # gone (or its id reused by another user's process)
            os._exit(0)
        time.sleep(1)


def main():
    host, port, certificate, key, watched = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    listener = socket.create_server(("127.0.0.1", 0))
    child = os.fork()
    if child:
        print(listener.getsockname()[1], child, flush=True)
        os._exit(0)
    os.setsid()
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)  # nothing of the background relay goes to the starter's output file
    os.dup2(quiet, 2)
    threading.Thread(target=watch, args=(watched,), daemon=True).start()
    while True:
        client, _ = listener.accept()
        threading.Thread(target=serve, args=(client, context, (host, port)), daemon=True).start()


main()
