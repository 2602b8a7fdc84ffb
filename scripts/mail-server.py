"""A real SMTP server for the dev stack and the tests: it keeps every mail it accepts in a Maildir.

    mail-server.py --port PORT [--host HOST] [--maildir DIR]
                   [--tls-cert FILE --tls-key FILE [--require-tls]] [--auth USER:PASSWORD]

Port 0 picks a free port. Once it listens it prints one line, "listening on HOST:PORT", and runs until SIGTERM or
SIGINT. Mails land in DIR/new, one file each, byte for byte as the client sent them (after the server has undone the
dot-stuffing), below a Return-Path and a Delivered-To header naming the envelope.
"""
import argparse
import asyncio
import mailbox
import signal
import ssl

from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword


class MaildirHandler:
    """Stores the bytes received rather than a parsed message (what aiosmtpd.handlers.Mailbox does): re-serializing
    could hide what the client got wrong, and the tests are there to see it."""

    def __init__(self, directory):
        # Maildir writes to tmp/ and renames into new/: a reader never sees half a mail.
        self.maildir = mailbox.Maildir(directory, create=True) if directory else None

    async def handle_DATA(self, server, session, envelope):
        if self.maildir is not None:
            trace = f"Return-Path: <{envelope.mail_from}>\r\n" + "".join(
                f"Delivered-To: {recipient}\r\n" for recipient in envelope.rcpt_tos)
            self.maildir.add(trace.encode() + envelope.content)
        return "250 OK"


def password_check(user, password):
    expected = LoginPassword(user.encode(), password.encode())

    def authenticate(server, session, envelope, mechanism, auth_data):
        # handled=False: aiosmtpd then answers a failure itself (535); True would leave the client waiting.
        return AuthResult(success=auth_data == expected, handled=False)
    return authenticate


async def serve(arguments):
    loop = asyncio.get_running_loop()
    tls = None
    if arguments.tls_cert:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)  # a server context: no client certificates asked
        tls.load_cert_chain(arguments.tls_cert, arguments.tls_key)
    options = dict(
        # aiosmtpd's default, socket.getfqdn(), can stall for seconds on DNS.
        hostname="localhost",
        # Internationalized addresses (RFC 6531), as Postfix and the big providers take them.
        enable_SMTPUTF8=True,
        tls_context=tls,
        require_starttls=arguments.require_tls,
        # With TLS, AUTH is offered only once the connection is encrypted; without, a dev server accepts it in clear.
        auth_require_tls=tls is not None,
    )
    if arguments.auth:
        user, _, password = arguments.auth.partition(":")
        options.update(authenticator=password_check(user, password), auth_required=True)
    handler = MaildirHandler(arguments.maildir)
    # The asyncio server itself rather than aiosmtpd's Controller: the Controller probes its own port to know it is up,
    # which does not work with port 0.
    server = await loop.create_server(lambda: SMTP(handler, loop=loop, **options), arguments.host, arguments.port)
    host, port = server.sockets[0].getsockname()[:2]

    stop = asyncio.Event()
    for signal_number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signal_number, stop.set)
    print(f"listening on {host}:{port}", flush=True)
    await stop.wait()
    server.close()
    await server.wait_closed()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True, help="0 picks a free port")
    parser.add_argument("--maildir", help="keep accepted mails in this Maildir (created if missing)")
    parser.add_argument("--tls-cert", help="PEM certificate (chain): offer STARTTLS")
    parser.add_argument("--tls-key", help="PEM private key of --tls-cert")
    parser.add_argument("--require-tls", action="store_true", help="refuse MAIL before STARTTLS")
    parser.add_argument("--auth", metavar="USER:PASSWORD", help="require AUTH PLAIN or LOGIN with these credentials")
    arguments = parser.parse_args()
    if bool(arguments.tls_cert) != bool(arguments.tls_key):
        parser.error("--tls-cert and --tls-key go together")
    if arguments.require_tls and not arguments.tls_cert:
        parser.error("--require-tls needs --tls-cert and --tls-key")
    asyncio.run(serve(arguments))


if __name__ == "__main__":
    main()
