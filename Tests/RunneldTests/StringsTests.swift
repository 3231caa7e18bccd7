import Testing

/// Strings in published values against a real runneld: `Tests/blackbox/test_strings.py` puts
/// every kind of byte a string's scan must stop at (control characters, escapes, bad and good
/// UTF-8) at the places where the scan's steps begin and end, in strings of every length to
/// 200, and checks each `pub`'s verdict, its error's byte offset, and what a subscriber gets.
/// `.ci/run` runs it against the release build too, whose scan takes wider steps.
@Suite struct StringsTests {
    @Test(.timeLimit(.minutes(4)), arguments: PythonSuite.checks("Tests/blackbox/test_strings.py"))
    func theStringChecksPass(_ check: PythonCheck) async {
        await PythonSuite.expectPasses(check)
    }
}
