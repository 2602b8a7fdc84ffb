import CoreMetrics

/// Counts outcomes of sign-ins (`auth_sign_ins_total`) and refreshes (`auth_refreshes_total`): the figures an operator
/// watches for credential stuffing (failures, throttling) and stolen tokens (reuse).
struct AuthCounters: Sendable {
    let factory: any MetricsFactory

    enum Event: String {
        case signIn = "auth_sign_ins_total", refresh = "auth_refreshes_total"
    }

    func count(_ event: Event, _ outcome: String) {
        Counter(label: event.rawValue, dimensions: [("outcome", outcome)], factory: factory).increment()
    }
}
