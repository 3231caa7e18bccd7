import Foundation

/// Reads the files, puts them in line, writes the Swift source (see main.swift). It runs at
/// build time only, so Foundation's file reading is no cost to runneld.
/// Thread rules: one thread (the tool's main).
enum DashboardEmbedder {
    static func run(_ arguments: [String]) {
        if arguments.count == 4 && arguments[1] == "--module" {
            embedModule(output: arguments[2], path: arguments[3])
            return
        }
        guard arguments.count >= 3 else {
            fail("usage: DashboardEmbedder OUTPUT.swift INDEX.html FILE... | --module OUTPUT.swift MODULE.js")
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
            if text.contains("</\(element.name)") {
                fail("\(path) contains </\(element.name), which would end its <\(element.name)> element early")
            }
            if !text.hasSuffix("\n") { text += "\n" }
            document += "<\(element.opening)>\n\(text)</\(element.name)>"
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

    /// The JavaScript client module (clients/js/runnel.js) as the Swift source of
    /// `ClientModule.source`, the file's text as it is.
    static func embedModule(output: String, path: String) {
        let source = """
            // Generated at build time by DashboardEmbedder (the EmbedDashboard plugin) from \
            \(baseName(path)); do not edit.
            extension ClientModule {
                static let source = \(literal(readText(path)))
            }

            """
        writeText(source, to: output)
    }

    /// The file name and element of a line that references a file to put in line, or nil: the
    /// element's name (`style` or `script`) and its opening tag's contents (`script
    /// type="module"` for a module script, whose `import`s then work in line as well).
    static func reference(in line: Substring) -> (String, (name: String, opening: String))? {
        let trimmed = line.drop(while: { $0 == " " || $0 == "\t" })
        for (prefix, suffix, element) in [
            ("<link rel=\"stylesheet\" href=\"", "\">", (name: "style", opening: "style")),
            ("<script src=\"", "\"></script>", (name: "script", opening: "script")),
            ("<script type=\"module\" src=\"", "\"></script>", (name: "script", opening: "script type=\"module\"")),
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
        guard let bytes = FileManager.default.contents(atPath: path) else { fail("cannot read \(path)") }
        guard let text = String(validating: bytes, as: UTF8.self) else { fail("\(path) is not valid UTF-8") }
        return text
    }

    static func writeText(_ text: String, to path: String) {
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        } catch {
            fail("cannot write \(path): \(error)")
        }
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("DashboardEmbedder: error: \(message)\n".utf8))
        exit(1)
    }
}
