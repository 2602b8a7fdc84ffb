import ArgumentParser
import Contracts
import FavoriteMeClient
import Foundation

/// The exit codes scripts can branch on.
enum ExitStatus: Int32 {
    case refused = 1
    case usage = 2
    case signedOut = 3
    case unreachable = 4

    var code: ExitCode { ExitCode(rawValue) }
}

/// A mistake in how favme was called that only shows once the command runs (no password given, no `--yes`).
enum CLIError: Error {
    case usage(String)
}

/// A subcommand: its work in `execute`, with every failure reported the same way (one line, or the problem as JSON
/// with `--json`) and turned into its exit code.
protocol FavmeCommand: AsyncParsableCommand {
    var global: GlobalOptions { get }
    func execute(_ context: Context) async throws
}

extension FavmeCommand {
    mutating func run() async throws {
        let json = global.json
        do {
            try await execute(try Context(global))
        } catch let error as FavoriteMeError {
            throw Failure.report(error, json: json, server: (try? global.serverURL())?.absoluteString)
        } catch CLIError.usage(let message) {
            Failure.emit(LocalProblem(type: "usage", title: "Usage error", detail: message), line: message, json: json)
            throw ExitStatus.usage.code
        }
    }
}

/// A problem that favme itself noticed, shaped like the server's problem documents for `--json`.
struct LocalProblem: Encodable {
    var type: String
    var title: String
    var detail: String
}

enum Failure {
    /// Prints `error` to stderr and returns the exit code for it.
    static func report(_ error: FavoriteMeError, json: Bool, server: String?) -> ExitCode {
        switch error {
        case .refused(let problem):
            var line = "\(problem.type): \(problem.detail) (request \(problem.requestId))"
            for field in problem.errors { line += "\n  \(field.field): \(field.message)" }
            if let seconds = problem.retryAfter { line += "\n  try again in \(seconds) s" }
            let document = ProblemDetails(type: problem.type, title: problem.title, status: problem.status,
                                          detail: problem.detail, requestId: problem.requestId,
                                          errors: problem.errors.isEmpty ? nil : problem.errors)
            emit(document, line: line, json: json)
            return ExitStatus.refused.code
        case .signedOut:
            emit(LocalProblem(type: "signed-out", title: "Not signed in",
                              detail: "No session on this device, or it has ended."),
                 line: "not signed in; run `favme login --email <email>` (or `favme signup`)", json: json)
            return ExitStatus.signedOut.code
        case .offline(let detail), .transport(let detail):
            let line = "could not reach \(server ?? "the server"): \(detail)"
            emit(LocalProblem(type: "unreachable", title: "Server unreachable", detail: detail), line: line, json: json)
            return ExitStatus.unreachable.code
        case .storage(let detail):
            emit(LocalProblem(type: "storage", title: "Local storage failed", detail: detail),
                 line: "could not use this device's storage: \(detail)", json: json)
            return ExitStatus.refused.code
        case .unexpectedAnswer(let status, let detail):
            emit(LocalProblem(type: "unexpected-answer", title: "Unexpected answer", detail: "\(status): \(detail)"),
                 line: "unexpected answer from the server (\(status)): \(detail)", json: json)
            return ExitStatus.refused.code
        }
    }

    static func emit(_ document: some Encodable, line: String, json: Bool) {
        if json, let text = try? Output.encode(document) {
            Console.error(text)
        } else {
            Console.error("favme: \(line)")
        }
    }
}

extension FavoriteMeError {
    /// Why the server could not be reached or answered, when that is what went wrong.
    var unreachableDetail: String? {
        switch self {
        case .offline(let detail), .transport(let detail): detail
        default: nil
        }
    }
}
