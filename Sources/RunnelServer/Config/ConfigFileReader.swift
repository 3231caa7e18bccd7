#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a config file into a `String` with plain POSIX calls, explaining failures in words
/// (`cannot read: No such file or directory`), and checks a directory a key names. Blocking;
/// used once at start-up and on reload.
enum ConfigFileReader {
    /// Config files are small; refuse anything absurd instead of reading it all.
    static let maxBytes = 16 * 1024 * 1024

    static func readText(path: String) -> Result<String, ConfigValueProblem> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(ConfigValueProblem("cannot read: \(errorText())")) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(ConfigValueProblem("cannot read: \(errorText())"))
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > maxBytes {
                return .failure(ConfigValueProblem("is larger than \(maxBytes) bytes; not a config file"))
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return .failure(ConfigValueProblem("is not valid UTF-8"))
        }
        return .success(text)
    }

    /// What keeps `path` from being a directory whose files runneld can read; nil when it is one.
    static func directoryProblem(path: String) -> ConfigValueProblem? {
        var status = stat()
        guard stat(path, &status) == 0 else {
            return ConfigValueProblem(errno == ENOENT ? "does not exist" : "cannot be used: \(errorText())")
        }
        guard status.st_mode & S_IFMT == S_IFDIR else { return ConfigValueProblem("is not a directory") }
        guard access(path, R_OK | X_OK) == 0 else { return ConfigValueProblem("cannot be read: \(errorText())") }
        return nil
    }

    private static func errorText() -> String { String(cString: strerror(errno)) }
}
