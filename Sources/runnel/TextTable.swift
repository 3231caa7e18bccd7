/// Left-aligned text columns separated by two spaces, as `ls -l` and `docker ps` print them.
/// Widths count Characters, which is right for the ASCII of subject names and numbers.
struct TextTable {
    private var rows: [[String]]

    init(header: [String]) { rows = [header] }

    mutating func add(_ row: [String]) { rows.append(row) }

    /// Every row on its own line, `\n`-terminated, without trailing spaces.
    var rendered: String {
        let columns = rows.map(\.count).max() ?? 0
        var widths = [Int](repeating: 0, count: columns)
        for row in rows {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        var text = ""
        for row in rows {
            var line = ""
            for (index, cell) in row.enumerated() {
                line += cell
                if index < row.count - 1 { line += String(repeating: " ", count: widths[index] - cell.count + 2) }
            }
            text += line + "\n"
        }
        return text
    }
}
