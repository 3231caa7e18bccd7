/// Lets the connection options stand before the subcommand too (`runnel --server h:p list`).
///
/// ArgumentParser gives options to the command that declares them, and every subcommand
/// declares `ConnectionOptions`; so leading connection options are moved to just after the
/// subcommand name before parsing. Anything else is left where it is.
enum GlobalOptions {
    /// The options that take a value, in their `--name VALUE` form.
    static let valued: Set<String> = ["--server", "--token", "--timeout"]

    /// `arguments` (without the program name) with leading connection options moved after the
    /// subcommand.
    static func reordered(_ arguments: [String]) -> [String] {
        var leading: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if valued.contains(argument), index + 1 < arguments.count {
                leading += arguments[index...(index + 1)]
                index += 2
            } else if let name = argument.split(separator: "=", maxSplits: 1).first,
                argument.contains("="), valued.contains(String(name))
            {
                leading.append(argument)
                index += 1
            } else {
                break
            }
        }
        guard !leading.isEmpty, index < arguments.count else { return arguments }
        return [arguments[index]] + leading + arguments[(index + 1)...]
    }
}
