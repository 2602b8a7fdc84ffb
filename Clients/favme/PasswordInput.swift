import ArgumentParser
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `--password-stdin` for the commands that take a password: never as an option value, which `ps` would show.
struct PasswordOptions: ParsableArguments {
    @Flag(help: "Read the password from the first line of standard input (else it is asked for without echo).")
    var passwordStdin = false

    /// The password from stdin, or asked for on the terminal (twice when `confirm`, for a new password).
    func read(confirm: Bool) throws -> String {
        let password: String
        if passwordStdin {
            guard let line = readLine(strippingNewline: true) else {
                throw CLIError.usage("--password-stdin: standard input is empty")
            }
            password = line.hasSuffix("\r") ? String(line.dropLast()) : line
        } else if isatty(STDIN_FILENO) == 1 {
            password = try Terminal.readWithoutEcho(prompt: "Password: ")
            if confirm, try Terminal.readWithoutEcho(prompt: "Password again: ") != password {
                throw CLIError.usage("the passwords differ")
            }
        } else {
            throw CLIError.usage("no password: pass it on standard input with --password-stdin, or run in a terminal")
        }
        guard !password.isEmpty else { throw CLIError.usage("the password is empty") }
        return password
    }
}

/// Reading a line from the terminal with echo off.
enum Terminal {
    /// The settings to put back if the user interrupts the prompt: a signal handler can capture nothing, and the
    /// handler only runs while this process is blocked in the prompt below.
    nonisolated(unsafe) private static var saved = termios()

    static func readWithoutEcho(prompt: String) throws -> String {
        FileHandle.standardError.write(Data(prompt.utf8))
        var settings = termios()
        guard tcgetattr(STDIN_FILENO, &settings) == 0 else {
            throw CLIError.usage("cannot read the terminal's settings to turn echo off")
        }
        saved = settings
        let previousHandler = signal(SIGINT) { _ in
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &Terminal.saved)
            _exit(130)
        }
        settings.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &settings)
        let line = readLine(strippingNewline: true)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
        signal(SIGINT, previousHandler)
        FileHandle.standardError.write(Data("\n".utf8))
        guard let line else { throw CLIError.usage("no password entered") }
        return line
    }
}
