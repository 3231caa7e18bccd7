#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads the files, puts them in line, writes the Swift source (see main.swift). Plain POSIX
/// calls, no Foundation: the tool is built for every build of the package, so it stays small.
/// Thread rules: one thread (the tool's main).
enum DashboardEmbedder {
    static func run(_ arguments: [String]) {
        guard arguments.count >= 3 else {
            fail("usage: DashboardEmbedder OUTPUT.swift INDEX.html FILE...")
        }
        let output = arguments[1]
        let indexPath = arguments[2]
        var files: [String: String] = [:]  // name -> path
        for path in arguments.dropFirst(3) {
            files[baseName(path)] = path
        }
        var inlined: Set<String> = []
        var document = ""
        for line in readText(indexPath).split(separator: "\n", omittingEmptySubsequences: false) {
            if !document.isEmpty { document += "\n" }
            guard let (name, element) = reference(in: line) else {
                document += line
                continue
            }
            guard let path = files[name] else {
                fail("\(indexPath) references \(name), which is not among the files to put in line")
            }
            var text = readText(path)
            if text.contains("</\(element)") {
                fail("\(path) contains </\(element), which would end its <\(element)> element early")
            }
            if !text.hasSuffix("\n") { text += "\n" }
            document += "<\(element)>\n\(text)</\(element)>"
            inlined.insert(name)
        }
        for name in files.keys.sorted() where !inlined.contains(name) {
            fail("\(files[name]!) is not referenced by \(indexPath)")
        }
        let source = """
            // Generated at build time by DashboardEmbedder (the EmbedDashboard plugin) from \
            \(([baseName(indexPath)] + files.keys.sorted()).joined(separator: ", ")); do not edit.
            extension DashboardPage {
                static let html = \(literal(document))
            }

            """
        writeText(source, to: output)
    }

    /// The file name and element (`style` or `script`) of a line that references a file to put
    /// in line, or nil.
    static func reference(in line: Substring) -> (String, String)? {
        let trimmed = line.drop(while: { $0 == " " || $0 == "\t" })
        for (prefix, suffix, element) in [
            ("<link rel=\"stylesheet\" href=\"", "\">", "style"), ("<script src=\"", "\"></script>", "script"),
        ] {
            var rest = trimmed
            while rest.last == " " || rest.last == "\t" { rest = rest.dropLast() }
            guard rest.hasPrefix(prefix), rest.hasSuffix(suffix) else { continue }
            let name = rest.dropFirst(prefix.count).dropLast(suffix.count)
            guard !name.isEmpty, !name.contains("\""), !name.contains("/") else { continue }
            return (String(name), element)
        }
        return nil
    }

    /// `text` as a Swift multi-line string literal, indented for a member of a type. Backslashes,
    /// every second quote of a run (so no `"""` ends the literal) and everything but printable
    /// ASCII and line breaks are escaped, so the literal means exactly `text`.
    static func literal(_ text: String) -> String {
        let indent = "        "
        var out = "\"\"\"\n" + indent
        var afterQuote = false
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\n" + indent
            case "\\": out += "\\\\"
            case "\"": out += afterQuote ? "\\\"" : "\""
            case " "..."~": out.unicodeScalars.append(scalar)
            default: out += "\\u{" + String(scalar.value, radix: 16) + "}"
            }
            afterQuote = scalar == "\"" && !afterQuote
        }
        return out + "\n" + indent + "\"\"\""
    }

    static func baseName(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    static func readText(_ path: String) -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { fail("cannot read \(path): \(errorText())") }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                fail("cannot read \(path): \(errorText())")
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { fail("\(path) is not valid UTF-8") }
        return text
    }

    static func writeText(_ text: String, to path: String) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { fail("cannot write \(path): \(errorText())") }
        var text = text
        text.withUTF8 { bytes in
            var done = 0
            while done < bytes.count {
                let count = write(descriptor, bytes.baseAddress! + done, bytes.count - done)
                if count < 0 {
                    if errno == EINTR { continue }
                    fail("cannot write \(path): \(errorText())")
                }
                done += count
            }
        }
        guard close(descriptor) == 0 else { fail("cannot write \(path): \(errorText())") }
    }

    static func fail(_ message: String) -> Never {
        var line = "DashboardEmbedder: error: \(message)\n"
        line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
        exit(1)
    }

    private static func errorText() -> String { String(cString: strerror(errno)) }
}
