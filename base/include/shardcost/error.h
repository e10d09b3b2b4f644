#pragma once
// The one error type of shardcost. Thrown inside the libraries, caught once in main, printed
// as "shardcost: <message>". Input errors (a file, a field, a flag the user can fix) exit
// with code 2; anything else with code 1.
#include <stdexcept>
#include <string>

namespace shardcost {

class Error : public std::runtime_error {
 public:
  enum class Kind { input, runtime };
  explicit Error(const std::string& message, Kind kind = Kind::runtime)
      : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }
  int exit_code() const { return kind_ == Kind::input ? 2 : 1; }

 private:
  Kind kind_;
};

// An error the user can fix by changing their input.
class InputError : public Error {
 public:
  explicit InputError(const std::string& message) : Error(message, Kind::input) {}
};

}  // namespace shardcost
