import Foundation

/// `POST /v1/auth/signup`.
public struct SignUpRequest: Codable, Sendable, Hashable {
    public var email: String
    public var password: String
    /// One of ``Experience/all``.
    public var experience: String
    /// Optional label for the session list ("Ana's iPhone"); the `User-Agent` is recorded as well.
    public var deviceName: String?

    public init(email: String, password: String, experience: String, deviceName: String? = nil) {
        self.email = email
        self.password = password
        self.experience = experience
        self.deviceName = deviceName
    }
}

/// `POST /v1/auth/login`.
public struct SignInRequest: Codable, Sendable, Hashable {
    public var email: String
    public var password: String
    public var deviceName: String?
    /// The credential an earlier sign-in or sign-up on this device answered with (`AuthSession.deviceCredential`):
    /// its sign-ins are then not slowed by strangers' failures from the same address.
    public var deviceCredential: String?

    public init(email: String, password: String, deviceName: String? = nil, deviceCredential: String? = nil) {
        self.email = email
        self.password = password
        self.deviceName = deviceName
        self.deviceCredential = deviceCredential
    }
}

/// `POST /v1/auth/refresh`, and the optional body of `POST /v1/auth/logout`.
public struct RefreshRequest: Codable, Sendable, Hashable {
    public var refreshToken: String
    public init(refreshToken: String) { self.refreshToken = refreshToken }
}

/// Which sessions `POST /v1/auth/logout?scope=` ends.
public enum LogoutScope: String, Codable, Sendable, CaseIterable {
    /// The session of the presented token (the default).
    case current
    /// Every other session of the user; this one stays signed in.
    case others
    /// Every session of the user, this one included.
    case global
}

/// The signed-in user, as `GET /v1/auth/me` returns it.
public struct UserProfile: Codable, Sendable, Hashable, Identifiable {
    public var id: UUID
    public var email: String
    public var experience: ExperienceID
    /// Free-form settings of the app, such as a default category. String keys and values.
    public var preferences: [String: String]
    public var createdAt: Date
    /// Whether the owner of the email followed the link of a verification mail (or of a password reset).
    public var emailVerified: Bool
    /// The name the user goes by in the apps ("Ana's flash cards"); absent until they give one.
    public var displayName: String?

    public init(id: UUID, email: String, experience: ExperienceID, preferences: [String: String], createdAt: Date,
                emailVerified: Bool = false, displayName: String? = nil) {
        self.id = id
        self.email = email
        self.experience = experience
        self.preferences = preferences
        self.createdAt = createdAt
        self.emailVerified = emailVerified
        self.displayName = displayName
    }

    enum CodingKeys: String, CodingKey {
        case id, email, experience, preferences, createdAt, emailVerified, displayName
    }

    /// A profile a client stored before `emailVerified` existed still opens (as unverified), and one stored before
    /// `displayName` existed opens without one.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(UUID.self, forKey: .id)
        email = try container.decode(String.self, forKey: .email)
        experience = try container.decode(ExperienceID.self, forKey: .experience)
        preferences = try container.decode([String: String].self, forKey: .preferences)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        emailVerified = try container.decodeIfPresent(Bool.self, forKey: .emailVerified) ?? false
        displayName = try container.decodeIfPresent(String.self, forKey: .displayName)
    }
}

/// What sign up, sign in and refresh answer: the user and a fresh token pair.
public struct AuthSession: Codable, Sendable, Hashable {
    public var user: UserProfile
    /// EdDSA-signed JWT for `Authorization: Bearer`, valid for `expiresIn` seconds.
    public var accessToken: String
    /// Opaque; exchange it at `POST /v1/auth/refresh`. Each use returns a new one and retires this one.
    public var refreshToken: String
    public var tokenType: String
    public var expiresIn: Int
    /// The session these tokens belong to (see `GET /v1/auth/sessions`).
    public var sessionId: UUID
    /// Given at sign-up and at a sign-in without a valid one: keep it on the device (past sign-out) and send it with
    /// the account's later sign-ins from this device.
    public var deviceCredential: String?

    public init(user: UserProfile, accessToken: String, refreshToken: String, expiresIn: Int, sessionId: UUID) {
        self.user = user
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.tokenType = "Bearer"
        self.expiresIn = expiresIn
        self.sessionId = sessionId
    }
}

/// `PATCH /v1/auth/me`: only these fields may change; any other field is refused.
public struct ProfileUpdate: Codable, Sendable, Hashable {
    public var experience: String?
    /// Merged into the stored preferences (JSON merge patch): a `null` value removes that key.
    public var preferences: [String: String?]?
    /// The name the user goes by, trimmed, on one line, at most ``maximumDisplayNameLength`` characters; an empty one
    /// removes it.
    public var displayName: String?

    public init(experience: String? = nil, preferences: [String: String?]? = nil, displayName: String? = nil) {
        self.experience = experience
        self.preferences = preferences
        self.displayName = displayName
    }

    /// The longest display name the server keeps (so a client can check before sending).
    public static let maximumDisplayNameLength = 64
}

/// `DELETE /v1/auth/me`: the password, re-confirmed.
public struct AccountDeletion: Codable, Sendable, Hashable {
    public var password: String
    public init(password: String) { self.password = password }
}

/// `POST /v1/auth/me/password`.
public struct PasswordChange: Codable, Sendable, Hashable {
    public var currentPassword: String
    public var newPassword: String
    public init(currentPassword: String, newPassword: String) {
        self.currentPassword = currentPassword
        self.newPassword = newPassword
    }
}

/// One signed-in device, as `GET /v1/auth/sessions` lists it.
public struct SessionSummary: Codable, Sendable, Hashable, Identifiable {
    public var id: UUID
    public var deviceName: String?
    public var userAgent: String?
    public var createdAt: Date
    public var lastUsedAt: Date
    /// When the session ends unless it is refreshed again (the earlier of its idle and absolute limits).
    public var expiresAt: Date
    /// The session of the token that asked.
    public var current: Bool

    public init(id: UUID, deviceName: String?, userAgent: String?, createdAt: Date, lastUsedAt: Date,
                expiresAt: Date, current: Bool) {
        self.id = id
        self.deviceName = deviceName
        self.userAgent = userAgent
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.expiresAt = expiresAt
        self.current = current
    }
}

public struct SessionList: Codable, Sendable, Hashable {
    public var sessions: [SessionSummary]
    public init(sessions: [SessionSummary]) { self.sessions = sessions }
}

/// `GET /v1/auth/revocations`: sessions ended recently enough that access tokens issued for them may still be
/// unexpired. Every service refuses tokens whose `sid` is listed. A session id is not a credential.
public struct RevokedSessions: Codable, Sendable, Hashable {
    public var sessionIds: [UUID]
    /// How far back the list reaches: at least the access-token lifetime.
    public var windowSeconds: Int

    public init(sessionIds: [UUID], windowSeconds: Int) {
        self.sessionIds = sessionIds
        self.windowSeconds = windowSeconds
    }
}

/// `GET /v1/auth/deleted-accounts?since=&after=`: accounts deleted from a moment on, so services holding data of a user
/// (favorites) erase it. A user id is not a credential; nothing else about the account is listed.
public struct DeletedAccounts: Codable, Sendable, Hashable {
    public struct Entry: Codable, Sendable, Hashable {
        public var userId: UUID
        public var deletedAt: Date

        public init(userId: UUID, deletedAt: Date) {
            self.userId = userId
            self.deletedAt = deletedAt
        }
    }

    /// In the order of (`deletedAt` to the second, `userId`), oldest first; at most ``pageSize`` per call. The next
    /// page starts after the last entry: ask again with `since` = its `deletedAt` and `after` = its `userId`.
    public var accounts: [Entry]

    /// The most entries one call lists.
    public static let pageSize = 1000

    public init(accounts: [Entry]) { self.accounts = accounts }
}

/// A user's profile as it changed: `GET /v1/auth/profile-changes` lists them for favorites-service, which sends each to
/// the user's devices on their change stream (`GET /v1/favorites/stream`, event `profile`), so every device follows an
/// experience, preferences or display name changed on one of them.
public struct ProfileChange: Codable, Sendable, Equatable {
    public var userId: UUID
    /// Counts the user's profile changes: a later change has a greater version.
    public var version: Int64
    public var changedAt: Date
    public var experience: ExperienceID
    public var preferences: [String: String]
    public var displayName: String?

    public init(userId: UUID, version: Int64, changedAt: Date, experience: ExperienceID, preferences: [String: String],
                displayName: String?) {
        self.userId = userId
        self.version = version
        self.changedAt = changedAt
        self.experience = experience
        self.preferences = preferences
        self.displayName = displayName
    }
}

/// `GET /v1/auth/profile-changes?since=`: the profiles changed from a moment on, oldest first, at most ``pageSize``;
/// peer-only, like the other feeds. A user id is not a credential.
public struct ProfileChanges: Codable, Sendable, Equatable {
    public var changes: [ProfileChange]
    /// auth-service's time when it answered: where the next poll starts (less a margin, for changes that committed
    /// after this answer with an earlier time).
    public var asOf: Date

    /// The most changes one call lists; a full page is followed by another from its last `changedAt`.
    public static let pageSize = 1000

    public init(changes: [ProfileChange], asOf: Date) {
        self.changes = changes
        self.asOf = asOf
    }
}

/// `POST /v1/auth/password-reset`: asks for a mail with a link that resets the password of the account of `email`.
public struct PasswordResetRequest: Codable, Sendable, Hashable {
    public var email: String
    public init(email: String) { self.email = email }
}

/// `POST /v1/auth/password-reset/confirm`: the token of a reset link and the password that replaces the old one.
public struct PasswordResetConfirmation: Codable, Sendable, Hashable {
    public var token: String
    public var newPassword: String
    public init(token: String, newPassword: String) {
        self.token = token
        self.newPassword = newPassword
    }
}

/// `POST /v1/auth/email-verification/confirm`: the token of a verification link.
public struct EmailVerificationConfirmation: Codable, Sendable, Hashable {
    public var token: String
    public init(token: String) { self.token = token }
}

/// The answer (202) to a request for a mail: the same whether or not an account has the address, so it tells nobody
/// which addresses have accounts.
public struct MailRequestAccepted: Codable, Sendable, Hashable {
    public var detail: String
    public init(detail: String) { self.detail = detail }
}
