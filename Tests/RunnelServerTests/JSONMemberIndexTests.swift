import Testing

@testable import RunnelServer

/// The index of an object's members that the first lookup in a published value notes
/// (`JSONMemberIndex`, `JSONValueBytes.lastMember(named:noting:)`) and lookups through it
/// (`lastMember(named:in:)`). That evaluations through it agree with scanning and with the
/// decoded tree, on every case of `ExpressionLazyPathTests` and the JSON test suite, is checked
/// there (`lazyOutcomes`).
@Suite struct JSONMemberIndexTests {
    /// The index the lookup of `name` in `json` notes, with the value it found.
    static func noted(_ json: String, lookingUp name: String = "a") throws -> (JSONMemberIndex, String?) {
        let raw = try RawJSON(validating: json)
        return raw.withUnsafeBytes { bytes in
            var index = JSONMemberIndex()
            let found = JSONValueBytes(validated: bytes).lastMember(named: JSONMemberName(name), noting: &index).value
            return (index, found.map { String(decoding: $0.bytes, as: UTF8.self) })
        }
    }

    /// The keys and values `json`'s index points at.
    static func members(_ json: String) throws -> [String]? {
        let (index, _) = try noted(json)
        guard index.isAvailable else { return nil }
        let bytes = Array(json.utf8)
        let start = bytes.firstIndex(of: UInt8(ascii: "{"))!
        return (0..<index.count).map { position in
            let (key, value) = index.member(position)
            let keyEnd = bytes[(start + key)...].firstIndex(of: UInt8(ascii: "\""))!
            return String(decoding: bytes[(start + key)..<keyEnd], as: UTF8.self) + "="
                + String(decoding: bytes[(start + value)...].prefix(3), as: UTF8.self)
        }
    }

    @Test func aLookupNotesEveryMemberInOrder() throws {
        #expect(
            try Self.members(#"{"load":0.95,"p":"x","q":[1,{"r":2}],"o":{"a":1},"t":true,"n":null}"#) == [
                "load=0.9", #"p="x""#, "q=[1,", #"o={"a"#, "t=tru", "n=nul",
            ])
        #expect(try Self.members(" { \"a\" : 1 ,\n\"b\":2 } ") == ["a=1 ,", "b=2 }"])
        #expect(try Self.members("{}") == [])
        #expect(try Self.members(#"{"a":1,"a":2}"#) == ["a=1,\"", "a=2}"])
        let eight = (1...8).map { #""k\#($0)":\#($0)"# }.joined(separator: ",")
        #expect(try Self.members("{\(eight)}")?.count == 8)
        // The lookup still finds what it looks for, as without noting.
        #expect(try Self.noted(#"{"a":1,"b":2,"a":3}"#).1 == "3")
    }

    @Test func objectsTheIndexCannotHoldHaveNone() throws {
        let nine = (1...9).map { #""k\#($0)":\#($0)"# }.joined(separator: ",")
        #expect(try Self.members("{\(nine)}") == nil, "past the capacity")
        #expect(try Self.members(#"{"a":1,"\u0062":2}"#) == nil, "a key with escapes")
        let far = #"{"pad":""# + String(repeating: "x", count: 70_000) + #"","a":1}"#
        #expect(try Self.members(far) == nil, "a value past 64 KiB")
        // Unavailable, the index still lets the lookup that made it find its member.
        #expect(try Self.noted("{\(nine),\"a\":7}").1 == "7")
        #expect(try Self.noted(far).1 == "1")
    }

    @Test func aLookupThroughTheIndexTakesTheLastOfARepeatedKeyAndMatchesWholeKeysOnly() throws {
        let raw = try RawJSON(validating: #"{"ab":1,"a":2,"abc":3,"a":4}"#)
        raw.withUnsafeBytes { bytes in
            let value = JSONValueBytes(validated: bytes)
            var index = JSONMemberIndex()
            _ = value.lastMember(named: JSONMemberName("zz"), noting: &index)
            #expect(index.isAvailable && index.count == 4)
            func lookup(_ name: String) -> String? {
                value.lastMember(named: JSONMemberName(name), in: index).value.map {
                    String(decoding: $0.bytes, as: UTF8.self)
                }
            }
            #expect(lookup("a") == "4")
            #expect(lookup("ab") == "1")
            #expect(lookup("abc") == "3")
            #expect(lookup("abcd") == nil)
            #expect(lookup("") == nil)
            // A name that would need escapes matches no key written without them, even where
            // the bytes after a key spell it.
            #expect(lookup(#"a":2,"abc"#) == nil)
            #expect(value.lastMember(named: JSONMemberName("a"), in: index).memberCount == 4)
        }
    }

    @Test func aChainsStagesReadAPublishedObjectThroughOneIndex() throws {
        let h = StageHarness()
        try h.run(#"[{"op":"filter","expr":".load > 0.9"},{"op":"map","expr":".p"}]"#)
        try h.pub([
            #"{"load":0.95,"p":"yes","load":0.5}"#, #"{"load":0.5,"p":"no","load":0.95}"#,
            #"{"p":{"k": 1},"load":1}"#, #"{"\u006coad":1,"p":"escaped"}"#,
        ])
        #expect(h.values() == [#""no""#, #"{"k": 1}"#, #""escaped""#])
    }
}
