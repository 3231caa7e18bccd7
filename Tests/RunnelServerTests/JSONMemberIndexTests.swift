import RunnelProtocol
import Testing

@testable import RunnelJSON
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

    /// The keys `index` points at in `json`, each with the value a lookup of it through the
    /// index finds (the last of a repeated key's); nil when the index is unavailable.
    static func members(of index: JSONMemberIndex, in json: String) throws -> [String]? {
        guard index.isAvailable else { return nil }
        let raw = try RawJSON(validating: json)
        return raw.withUnsafeBytes { bytes in
            let value = JSONValueBytes(validated: bytes)
            let start = value.range.lowerBound
            return (0..<index.count).map { position in
                let key = start + index.key(position)
                let keyEnd = bytes[key...].firstIndex(of: UInt8(ascii: "\""))!
                let name = String(decoding: bytes[key..<keyEnd], as: UTF8.self)
                let found = value.lastMember(named: JSONMemberName(name), in: index).value!
                return name + "=" + String(decoding: found.bytes, as: UTF8.self)
            }
        }
    }

    /// The members the lookup of "a" in `json` notes.
    static func members(_ json: String) throws -> [String]? {
        try members(of: noted(json).0, in: json)
    }

    /// The index the scan of a `pub` request publishing `json` notes for its value.
    static func published(
        _ json: String, around: (String) -> String = { #"{"op":"pub","subject":"s","value":\#($0)}"# }
    )
        throws -> JSONMemberIndex
    {
        var line = around(json)
        return try line.withUTF8 { try EnvelopeScanner().scan(UnsafeRawBufferPointer($0)).valueMembers }
    }

    static let sixteen = (1...16).map { #""k\#($0)":\#($0)"# }.joined(separator: ",")
    static let seventeen = (1...17).map { #""k\#($0)":\#($0)"# }.joined(separator: ",")
    static let far = #"{"pad":""# + String(repeating: "x", count: 70_000) + #"","a":1}"#

    @Test func aLookupNotesEveryMemberInOrder() throws {
        #expect(
            try Self.members(#"{"load":0.95,"p":"x","q":[1,{"r":2}],"o":{"a":1},"t":true,"n":null}"#) == [
                "load=0.95", #"p="x""#, #"q=[1,{"r":2}]"#, #"o={"a":1}"#, "t=true", "n=null",
            ])
        #expect(try Self.members(" { \"a\" : 1 ,\n\"b\":\t\"2\"\r\n} ") == ["a=1", #"b="2""#])
        #expect(try Self.members("{}") == [])
        #expect(try Self.members(#"{"a":1,"a":2}"#) == ["a=2", "a=2"])
        #expect(try Self.members("{\(Self.sixteen)}")?.count == 16)
        // The lookup still finds what it looks for, as without noting.
        #expect(try Self.noted(#"{"a":1,"b":2,"a":3}"#).1 == "3")
    }

    @Test func objectsTheIndexCannotHoldHaveNone() throws {
        #expect(try Self.members("{\(Self.seventeen)}") == nil, "past the capacity")
        #expect(try Self.members(#"{"a":1,"\u0062":2}"#) == nil, "a key with escapes")
        #expect(try Self.members(Self.far) == nil, "a key past 64 KiB")
        // Unavailable, the index still lets the lookup that made it find its member.
        #expect(try Self.noted("{\(Self.seventeen),\"a\":7}").1 == "7")
        #expect(try Self.noted(Self.far).1 == "1")
    }

    @Test func theScanOfAPublishNotesWhatTheFirstLookupWould() throws {
        let objects = [
            #"{"load":0.95,"p":"x","q":[1,{"r":2}],"o":{"a":1},"t":true,"n":null}"#,
            " { \"a\" : 1 ,\n\"b\":\t\"2\"\r\n} ", "{}", #"{"a":1,"a":2}"#, #"{"":{"":[]}}"#,
            "{\(Self.sixteen)}", "{\(Self.seventeen)}", #"{"a":1,"\u0062":2}"#, Self.far,
        ]
        for json in objects {
            let scanned = try Self.published(json)
            let looked = try Self.noted(json).0
            #expect(scanned.isBuilt && scanned.isAvailable == looked.isAvailable, "\(json.prefix(40))")
            #expect(try Self.members(of: scanned, in: json) == Self.members(of: looked, in: json), "\(json.prefix(40))")
        }
        // Not an object, or not the last `value`, or not the last object the scan met: no
        // index, and the first lookup makes one.
        for json in ["1", #""{\"a\":1}""#, "[{}]", "null"] {
            #expect(try !Self.published(json).isBuilt, "\(json)")
        }
        #expect(try !Self.published(#"{"a":1}"#) { #"{"op":"pub","value":\#($0),"value":2}"# }.isBuilt)
        #expect(try !Self.published(#"{"a":1}"#) { #"{"op":"pub","value":\#($0),"ops":{"b":2}}"# }.isBuilt)
        #expect(try Self.published(#"{"a":1}"#) { #"{"value":{"b":2},"op":"pub","value":\#($0)}"# }.count == 1)
        #expect(
            try Self.members(
                of: Self.published(#"{"a":1}"#) { #"{"ops":{"b":2,"c":3},"value":\#($0)}"# }, in: #"{"a":1}"#) == [
                    "a=1"
                ])
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
