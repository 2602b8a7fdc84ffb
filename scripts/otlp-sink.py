"""An OTLP/HTTP receiver for the stack's traces, on PyPI's oteltest: every span it receives becomes one JSON line in
the output file (service, name, kind, trace, span and parent ids, attributes), for the tests to read.

    otlp-sink.py --port PORT --output FILE

Prints "listening on 127.0.0.1:PORT" once it accepts, and runs until SIGTERM or SIGINT.
"""
import argparse
import json
import logging
import signal
import threading

from oteltest.sink import HttpSink
from oteltest.sink.handler import RequestHandler


def plain(value):
    """An OTLP AnyValue as JSON: the one field it has set."""
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind in ("string_value", "bool_value", "int_value", "double_value") else str(value)


class SpanFile(RequestHandler):
    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()

    def handle_trace(self, request, headers):
        lines = []
        for resource_spans in request.resource_spans:
            resource = {a.key: plain(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    lines.append(json.dumps({
                        "service": resource.get("service.name"),
                        "name": span.name,
                        "kind": span.kind,  # 2 server, 3 client (OTLP's SpanKind)
                        "traceId": span.trace_id.hex(),
                        "spanId": span.span_id.hex(),
                        "parentSpanId": span.parent_span_id.hex(),
                        "attributes": {a.key: plain(a.value) for a in span.attributes},
                    }))
        with self.lock, open(self.path, "a") as output:
            output.writelines(line + "\n" for line in lines)

    def handle_metrics(self, request, headers):
        pass

    def handle_logs(self, request, headers):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--output", required=True)
    arguments = parser.parse_args()
    sink = HttpSink(SpanFile(arguments.output), logging.getLogger("otlp-sink"), port=arguments.port)
    sink.start()
    print(f"listening on 127.0.0.1:{arguments.port}", flush=True)
    stopped = threading.Event()
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: stopped.set())
    stopped.wait()
    sink.stop()


main()
