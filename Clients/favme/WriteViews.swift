import Contracts
import FavoriteMeClient
import Foundation

/// A write to the favorites as favme shows it: in words, and as JSON (`id` is the write's `Idempotency-Key`).
struct WriteView: Encodable {
    var id: String
    var action: String
    var experience: ExperienceID
    var itemId: String?
    var title: String?
    var madeAt: Date

    init(_ write: PendingWrite) {
        id = write.id.uuidString.lowercased()
        madeAt = write.madeAt
        switch write.kind {
        case .favorite(let experience, let itemId):
            (action, self.experience, self.itemId) = ("favorite", experience, itemId)
        case .unfavorite(let experience, let itemId):
            (action, self.experience, self.itemId) = ("unfavorite", experience, itemId)
        case .clear(let experience):
            (action, self.experience) = ("clear", experience)
        case .writeCard(let experience, let draft):
            (action, self.experience, title) = ("write-card", experience, draft.title)
        }
    }

    /// "favorite SK-C-5", "clear rijksmuseum".
    var summary: String {
        switch action {
        case "clear": "clear \(experience)"
        case "write-card": "write card \"\(title ?? "")\" in \(experience)"
        default: "\(action) \(itemId ?? "") in \(experience)"
        }
    }
}

/// The JSON of a write the server took without a body to show (unfavorite, clear).
struct DoneDocument: Encodable {
    struct Done: Encodable {
        var action: String
        var experience: ExperienceID
        var itemId: String?
    }

    var done: Done
}

/// The JSON of a write left in the queue.
struct QueuedDocument: Encodable {
    var queued: WriteView
}

/// What `favme sync` did: writes sent, refused (with the server's problem) and still waiting, then the changes the
/// feed brought (`synced` false when it could not be read).
struct SyncDocument: Encodable {
    struct Refusal: Encodable {
        var write: WriteView
        var problem: ProblemDetails
    }

    var sent: [WriteView]
    var refused: [Refusal]
    var waiting: Int
    var synced: Bool
    var changes: [FavoriteChange]

    init(_ report: DrainReport) {
        sent = report.sent.map(WriteView.init)
        refused = report.refused.map { refusal in
            let problem = refusal.problem
            return Refusal(write: WriteView(refusal.write),
                           problem: ProblemDetails(type: problem.type, title: problem.title, status: problem.status,
                                                   detail: problem.detail, requestId: problem.requestId,
                                                   errors: problem.errors.isEmpty ? nil : problem.errors))
        }
        waiting = report.waiting
        synced = false
        changes = []
    }

    var text: String {
        var lines = sent.map { "sent: \($0.summary)" }
        lines += refused.map { "refused: \($0.write.summary) — \($0.problem.type): \($0.problem.detail) "
            + "(request \($0.problem.requestId))" }
        if waiting > 0 { lines.append("still waiting: \(waiting) write\(waiting == 1 ? "" : "s")") }
        if synced {
            lines.append(changes.isEmpty ? "favorites up to date"
                : "\(changes.count) change\(changes.count == 1 ? "" : "s") applied:")
            lines += changes.map { change in
                switch change.kind {
                case .added: "  + \(change.experience) \(change.itemId ?? "")  \(change.favorite?.item.title ?? "")"
                case .removed: "  - \(change.experience) \(change.itemId ?? "")"
                case .cleared: "  × \(change.experience) (cleared)"
                }
            }
        }
        return lines.joined(separator: "\n")
    }
}
