import Foundation

/// Runs a program to completion and returns its combined output; throws when it exits non-zero (with the output).
/// It blocks the calling thread until the program exits.
///
/// Written on `posix_spawn` and `waitpid` because Foundation's `Process` on Linux sometimes never notices that a
/// child exited (seen here with `runuser` and `pg_ctl`: zombies left, `waitUntilExit()` hanging).
public func runProgram(_ executable: String, _ arguments: [String]) throws -> String {
    let outputPath = NSTemporaryDirectory() + "favoriteme-\(UUID().uuidString).out"
    defer { unlink(outputPath) }
    let pid = try spawnProgram(executable, arguments, outputPath: outputPath)
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 {
        guard errno == EINTR else { throw TestSupportError("waitpid failed for \(executable): \(errno)") }
    }
    let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    // WIFEXITED and WEXITSTATUS are macros Swift does not import: exited normally when the low 7 bits are 0.
    let exitedNormally = status & 0x7f == 0
    let exitCode = (status >> 8) & 0xff
    guard exitedNormally, exitCode == 0 else {
        throw TestSupportError("\(executable) \(arguments.joined(separator: " ")) failed (status \(status)): \(output)")
    }
    return output
}

/// Starts a program in the background, its output (standard output and error) going to the file at `outputPath`, and
/// returns its process id: for servers a test starts, talks to, and ends with `SIGTERM` and ``reap(_:)``.
public func spawnProgram(_ executable: String, _ arguments: [String], outputPath: String) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_APPEND, 0o600)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    // Nothing else of ours: a child holding a copy of a test server's connection keeps it open after the server
    // closes it (the peer never sees the close), and a long-lived one (the test cluster's) would hold it for good.
    closeFrom(3, in: &actions)
    // A child inherits the spawning thread's blocked signals, and the test runner's threads may block SIGTERM: the
    // server would never see the signal that ends it. It starts with none blocked and every handler at its default.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    var everySignal = sigset_t()
    sigfillset(&everySignal)
    posix_spawnattr_setsigdefault(&attributes, &everySignal)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for argument in argv { free(argument) } }
    var pid = pid_t()
    let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
    guard spawned == 0 else { throw TestSupportError("cannot start \(executable): error \(spawned)") }
    return pid
}

/// Waits for a program started by ``spawnProgram(_:_:outputPath:)`` to exit, so that it leaves no zombie.
public func reap(_ pid: pid_t) {
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1, errno == EINTR {}
}

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module does not export.
private func closeFrom(_ lowest: Int32, in actions: inout posix_spawn_file_actions_t) {
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return }
    _ = unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, lowest)
}
