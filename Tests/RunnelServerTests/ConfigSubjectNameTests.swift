import RunnelProtocol
import Testing

@testable import RunnelServer

@Suite("Subject names and patterns")
struct ConfigSubjectNameTests {
    @Test(arguments: [
        "a", "cpu", "sensors.kitchen.temp", "a.b.c.d.e", "A-b_c", "x.1.2", "températures.cuisine", "日本.東京",
        "emoji.😀", "a#b", "a$b", "{\"json\"}", String(repeating: "a", count: 255),
        String(repeating: "a.", count: 127) + "a",
    ])
    func validNames(_ name: String) {
        #expect(SubjectName.problem(withName: name) == nil)
        #expect(SubjectName.isValidName(name))
        // Every name is also a valid pattern, one that names a single subject.
        #expect(SubjectName.isValidPattern(name))
        #expect(!SubjectName.isPattern(name))
    }

    @Test(arguments: [
        ("", "must not be empty"),
        (".", "token 1 is empty"),
        (".a", "token 1 is empty"),
        ("a.", "token 2 is empty"),
        ("a..b", "token 2 is empty"),
        ("a b", "whitespace"),
        ("a\tb", "control"),
        ("a\nb", "control"),
        ("a\u{0}b", "control"),
        ("a\u{7F}b", "control"),
        ("a\u{85}b", "whitespace"),
        ("a\u{A0}b", "whitespace"),
        ("a\u{2003}b", "whitespace"),
        ("a\u{3000}b", "whitespace"),
        ("a.*", "'*' is not allowed"),
        ("a.>", "'>' is not allowed"),
        ("a*", "'*' is not allowed"),
        ("x>y", "'>' is not allowed"),
        (String(repeating: "a", count: 256), "at most 255 bytes, got 256"),
        (String(repeating: "é", count: 128), "at most 255 bytes, got 256"),
    ])
    func invalidNames(_ name: String, _ reason: String) throws {
        let problem = try #require(SubjectName.problem(withName: name))
        #expect(problem.contains(reason), "\(name.debugDescription): \(problem)")
        #expect(!SubjectName.isValidName(name))
    }

    @Test(arguments: ["*", ">", "a.*", "a.>", "*.b", "a.*.c", "*.*", "*.>", "sensors.*.temp", "sensors.>", "a.*.*.>"])
    func validPatterns(_ pattern: String) {
        #expect(SubjectName.problem(withPattern: pattern) == nil, "\(pattern)")
        #expect(SubjectName.isPattern(pattern))
        #expect(SubjectName.problem(withName: pattern) != nil)
    }

    @Test(arguments: [
        ("a*", "must stand alone"),
        ("*a", "must stand alone"),
        ("a.b*.c", "must stand alone"),
        ("a.>b", "must stand alone"),
        ("a.b>", "must stand alone"),
        ("**", "must stand alone"),
        (">>", "must stand alone"),
        ("*>", "must stand alone"),
        (">.a", "'>' may only be the last token"),
        ("a.>.b", "'>' may only be the last token"),
        (">.>", "'>' may only be the last token"),
        ("a.>.", "token 3 is empty"),
        ("a..*", "token 2 is empty"),
        ("a. *", "whitespace"),
        ("", "must not be empty"),
    ])
    func invalidPatterns(_ pattern: String, _ reason: String) throws {
        let problem = try #require(SubjectName.problem(withPattern: pattern))
        #expect(problem.contains(reason), "\(pattern): \(problem)")
        #expect(!SubjectName.isValidPattern(pattern))
    }

    @Test func lengthLimitCountsUTF8Bytes() {
        // 127 two-byte scalars plus one byte: 255 bytes, the longest allowed.
        #expect(SubjectName.isValidName(String(repeating: "é", count: 127) + "a"))
        #expect(!SubjectName.isValidName(String(repeating: "é", count: 127) + "ab"))
        #expect(SubjectName.isValidPattern(String(repeating: "a.", count: 127) + ">"))
    }
}
