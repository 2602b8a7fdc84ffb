import CoreMetrics

/// Counts outcomes of sign-ins (`auth_sign_ins_total`), refreshes (`auth_refreshes_total`) and mails
/// (`auth_mails_total`): the figures an operator watches for credential stuffing (failures, throttling), stolen tokens
/// (reuse) and a mail server that stopped taking mail.
struct AuthCounters: Sendable {
    let factory: any MetricsFactory

    enum Event: String {
        case signIn = "auth_sign_ins_total", refresh = "auth_refreshes_total"
    }

    func count(_ event: Event, _ outcome: String) {
        Counter(label: event.rawValue, dimensions: [("outcome", outcome)], factory: factory).increment()
    }

    /// `auth_mails_total` by purpose and outcome: `sent`, `no-account` (nothing to send), `retrying`, `undeliverable`.
    func countMail(_ purpose: LinkPurpose, _ outcome: String) {
        Counter(label: "auth_mails_total", dimensions: [("purpose", purpose.rawValue), ("outcome", outcome)],
                factory: factory).increment()
    }
}
