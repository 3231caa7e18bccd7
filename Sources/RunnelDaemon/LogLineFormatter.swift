import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Formats one log event as one line (newline included).
///
/// - `.plain`: `2026-11-22T03:39:31.123Z info runneld: message key=value`, for terminals and
///   files.
/// - `.journald`: `<6>runneld: message key=value`: the `<N>` syslog priority prefix journald
///   parses from a service's stderr, and no timestamp (journald stamps each line itself).
///
/// Newlines inside messages and values are escaped so one event is always one line. Metadata is
/// sorted by key for stable output. A pure value; safe from any thread.
public struct LogLineFormatter: Sendable, Equatable {
    public enum Style: Sendable, Equatable {
        case plain
        case journald
    }

    public let style: Style

    public init(style: Style) { self.style = style }

    /// The line for one event; `time` is the wall-clock time used by `.plain`.
    public func format(
        level: Logger.Level, label: String, message: String, metadata: Logger.Metadata, time: timespec
    ) -> String {
        var line: String
        switch style {
        case .journald:
            line = "<\(Self.syslogPriority(level))>"
        case .plain:
            line = Self.timestamp(time) + " " + level.rawValue + " "
        }
        line += label
        line += ": "
        line += Self.escaped(message)
        for key in metadata.keys.sorted() {
            line += " "
            line += key
            line += "="
            line += Self.renderValue(metadata[key]!)
        }
        line += "\n"
        return line
    }

    /// The syslog priority (RFC 5424 severity) for a swift-log level.
    public static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    /// UTC, millisecond precision: `2026-11-22T03:39:31.123Z`.
    public static func timestamp(_ time: timespec) -> String {
        var seconds = time_t(time.tv_sec)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return pad(Int(parts.tm_year) + 1900, 4) + "-" + pad(Int(parts.tm_mon) + 1, 2) + "-"
            + pad(Int(parts.tm_mday), 2) + "T" + pad(Int(parts.tm_hour), 2) + ":" + pad(Int(parts.tm_min), 2)
            + ":" + pad(Int(parts.tm_sec), 2) + "." + pad(Int(time.tv_nsec) / 1_000_000, 3) + "Z"
    }

    /// A metadata value: bare when it is one plain word, else quoted with escapes.
    static func renderValue(_ value: Logger.Metadata.Value) -> String {
        let text: String
        switch value {
        case .string(let string): text = string
        case .stringConvertible(let convertible): text = convertible.description
        case .array(let values): text = "[" + values.map(renderValue).joined(separator: ",") + "]"
        case .dictionary(let members):
            text = "{" + members.keys.sorted().map { "\($0)=\(renderValue(members[$0]!))" }.joined(separator: ",") + "}"
        }
        let needsQuotes =
            text.isEmpty || text.unicodeScalars.contains { $0 == " " || $0 == "\"" || $0 == "=" || $0.value < 0x20 }
        guard needsQuotes else { return text }
        var quoted = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            default: quoted += escaped(String(scalar))
            }
        }
        return quoted + "\""
    }

    /// `text` with line breaks and other control characters escaped, so it stays on one line.
    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return text }
        var output = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    output += "\\x" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        return output
    }
}
