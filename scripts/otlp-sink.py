"""An OTLP/HTTP receiver for the stack's traces: every span it receives becomes one JSON line in the output file
(service, name, kind, trace, span and parent ids, attributes), for the tests to read. Requests are decoded with the
protocol's own definitions (PyPI's opentelemetry-proto) and answered as the specification says: 200 with an empty
`ExportTraceServiceResponse` in the request's encoding, so an exporter counts the batch as delivered.

    otlp-sink.py --port PORT --output FILE

Prints "listening on 127.0.0.1:PORT" once it accepts, and runs until SIGTERM or SIGINT.
"""
import argparse
import json
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import Parse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def plain(value):
    """An OTLP AnyValue as JSON: the one field it has set."""
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind in ("string_value", "bool_value", "int_value", "double_value") else str(value)


def span_lines(request):
    for resource_spans in request.resource_spans:
        resource = {a.key: plain(a.value) for a in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield json.dumps({
                    "service": resource.get("service.name"),
                    "name": span.name,
                    "kind": span.kind,  # 2 server, 3 client (OTLP's SpanKind)
                    "traceId": span.trace_id.hex(),
                    "spanId": span.span_id.hex(),
                    "parentSpanId": span.parent_span_id.hex(),
                    "attributes": {a.key: plain(a.value) for a in span.attributes},
                }) + "\n"


def handler(output, lock):
    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the standard library's name)
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            as_json = self.headers.get("Content-Type", "").startswith("application/json")
            if self.path != "/v1/traces":
                self.send_error(404)
                return
            request = ExportTraceServiceRequest()
            try:
                Parse(body, request) if as_json else request.ParseFromString(body)
            except Exception:  # noqa: BLE001 (any undecodable body is the client's error)
                self.send_error(400)
                return
            with lock, open(output, "a") as file:
                file.writelines(span_lines(request))
            answer = ExportTraceServiceResponse()
            payload = b"{}" if as_json else answer.SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/json" if as_json else "application/x-protobuf")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *arguments):
            pass  # one line per batch would drown the log
    return Receiver


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--output", required=True)
    arguments = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", arguments.port), handler(arguments.output, threading.Lock()))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"listening on 127.0.0.1:{arguments.port}", flush=True)
    stopped = threading.Event()
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: stopped.set())
    stopped.wait()
    server.shutdown()


main()
