import Foundation

/// stderr, for errors, warnings and prompts: stdout carries only the command's result.
enum Console {
    static func error(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
