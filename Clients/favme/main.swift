import ArgumentParser
import Foundation

await Entry.run()

/// The entry point is spelled out instead of `@main` so that usage errors exit with 2 (ArgumentParser's default is
/// 64) while every other exit code is chosen by the commands themselves (see ExitStatus).
enum Entry {
    static func run() async {
        do {
            var command = try await Favme.asyncParseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let code as ExitCode {
            exit(code.rawValue)
        } catch {
            if Favme.exitCode(for: error) == .validationFailure {
                Console.error(Favme.fullMessage(for: error))
                exit(ExitStatus.usage.rawValue)
            }
            Favme.exit(withError: error)  // help, version, and anything ArgumentParser reports itself
        }
    }
}
