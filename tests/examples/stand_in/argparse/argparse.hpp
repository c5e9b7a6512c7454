// A stand-in for the calls PyTorch's DCGAN example (examples/dcgan.cpp) makes of p-ranav's
// argparse, a header-only library Debian does not package: the tests compile the example
// against this file where no argparse/argparse.hpp is installed. It follows that library's
// behaviour for what it covers: options with a help text, a default value and an integer
// scan ('i': the base from the prefix, 0x hex, 0 octal, else decimal), "--name value" or
// "--name=value"; -h/--help and -v/--version print and exit 0; an unknown argument or a
// missing value throws std::runtime_error, a value that is not an integer
// std::invalid_argument, one out of range std::range_error; operator<< prints the help.
#pragma once

#include <any>
#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <deque>

namespace argparse {

class Argument {
 public:
  explicit Argument(std::string name) : name_(std::move(name)) {}

  Argument& help(std::string text) {
    help_ = std::move(text);
    return *this;
  }
  template <typename T>
  Argument& default_value(T&& value) {
    default_text_ = describe(value);
    default_ = std::forward<T>(value);
    return *this;
  }
  Argument& default_value(const char* value) { return default_value(std::string(value)); }
  // 'i': an integer of type T, its base from its prefix.
  template <char Shape, typename T>
  Argument& scan() {
    static_assert(Shape == 'i' && std::is_integral_v<T> && std::is_signed_v<T>,
                  "this stand-in scans signed integers ('i') only");
    parse_ = [](const std::string& text) -> std::any {
      errno = 0;
      char* end = nullptr;
      const long long value = std::strtoll(text.c_str(), &end, 0);
      if (text.empty() || end != text.c_str() + text.size())
        throw std::invalid_argument("pattern '" + text + "' not found");
      if (errno == ERANGE || value < std::numeric_limits<T>::min() || value > std::numeric_limits<T>::max())
        throw std::range_error("'" + text + "' not representable");
      return static_cast<T>(value);
    };
    return *this;
  }

 private:
  friend class ArgumentParser;
  template <typename T>
  static std::string describe(const T& value) {
    if constexpr (std::is_arithmetic_v<std::decay_t<T>>) return std::to_string(value);
    else return std::string(value);
  }

  std::string name_, help_, default_text_;
  std::any default_, value_;
  std::any (*parse_)(const std::string&) = [](const std::string& text) -> std::any { return text; };
};

class ArgumentParser {
 public:
  explicit ArgumentParser(std::string program_name = {}, std::string version = "1.0")
      : program_name_(std::move(program_name)), version_(std::move(version)) {}

  Argument& add_argument(std::string name) {
    arguments_.emplace_back(std::move(name));
    return arguments_.back();
  }

  void parse_args(int argc, const char* const argv[]) {
    for (int i = 1; i < argc; ++i) {
      const std::string current = argv[i];
      if (current == "-h" || current == "--help") {
        std::cout << *this;
        std::exit(0);
      }
      if (current == "-v" || current == "--version") {
        std::cout << version_ << std::endl;
        std::exit(0);
      }
      const size_t assign = current.find('=');
      const std::string name = current.substr(0, assign);
      Argument* argument = find(name);
      if (argument == nullptr) throw std::runtime_error("Unknown argument: " + current);
      if (assign != std::string::npos) {
        argument->value_ = argument->parse_(current.substr(assign + 1));
        continue;
      }
      if (i + 1 == argc) throw std::runtime_error("Too few arguments for '" + current + "'.");
      argument->value_ = argument->parse_(argv[++i]);
    }
    parsed_ = true;
  }

  template <typename T = std::string>
  T get(std::string_view name) const {
    if (!parsed_) throw std::logic_error("Nothing parsed, no arguments are available.");
    for (const Argument& argument : arguments_)
      if (argument.name_ == name) {
        const std::any& value = argument.value_.has_value() ? argument.value_ : argument.default_;
        if (!value.has_value()) throw std::logic_error("No value provided for '" + std::string(name) + "'.");
        return std::any_cast<T>(value);
      }
    throw std::logic_error("No such argument: " + std::string(name));
  }

  friend std::ostream& operator<<(std::ostream& out, const ArgumentParser& parser) {
    parser.print_help(out);
    return out;
  }

 private:
  void print_help(std::ostream& out) const {
    out << "Usage: " << program_name_ << " [--help] [--version]";
    for (const Argument& argument : arguments_) out << " [" << argument.name_ << " VAR]";
    out << "\n\nOptional arguments:\n  -h, --help     shows help message and exits\n"
        << "  -v, --version  prints version information and exits\n";
    for (const Argument& argument : arguments_) {
      out << "  " << argument.name_ << "  " << argument.help_;
      if (!argument.default_text_.empty()) out << " [default: " << argument.default_text_ << "]";
      out << "\n";
    }
  }

  Argument* find(const std::string& name) {
    for (Argument& argument : arguments_)
      if (argument.name_ == name) return &argument;
    return nullptr;
  }

  std::string program_name_, version_;
  std::deque<Argument> arguments_;  // references stay valid as arguments are added
  bool parsed_ = false;
};

}  // namespace argparse
