#include "dtrain/util/crash_trace.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <typeinfo>

namespace dtrain::util {

namespace {

constexpr std::array<int, 5> kFatalSignals = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
constexpr int kMaxFrames = 64;

// What the handler writes before the stack. Written outside the handler
// (set_crash_trace_rank), read inside it: a fixed buffer, never reallocated.
char g_prefix[64] = "[rank -/local -]";

// An alternate stack, so that a stack overflow can still be reported.
alignas(16) char g_alternate_stack[64 * 1024];

void write_text(const char* text) {
  // Only async-signal-safe calls in here; a short write is not retried.
  const ssize_t written = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)written;
}

const char* signal_name(int signal) {
  switch (signal) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGILL:
      return "SIGILL";
    case SIGFPE:
      return "SIGFPE";
    case SIGABRT:
      return "SIGABRT";
    default:
      return "?";
  }
}

// `value` in hexadecimal ("0x1f"), without allocating: async-signal-safe.
// buffer: at least 19 characters.
const char* hex(std::uintptr_t value, char* buffer) {
  char reversed[16];
  int digits = 0;
  do {
    reversed[digits++] = "0123456789abcdef"[value % 16];
    value /= 16;
  } while (value != 0);
  buffer[0] = '0';
  buffer[1] = 'x';
  for (int i = 0; i < digits; ++i) {
    buffer[2 + i] = reversed[digits - 1 - i];
  }
  buffer[2 + digits] = '\0';
  return buffer;
}

// " (libfoo.so.1+0x1234)" for an address inside a loaded object; false when
// it lies in none. dladdr is not on POSIX's async-signal-safe list, but it
// only reads the loader's tables (under a lock a crash rarely holds; the
// handler's alarm ends a wait on it).
bool write_object_of(std::uintptr_t address) {
  Dl_info info{};
  if (address == 0 || ::dladdr(reinterpret_cast<void*>(address), &info) == 0 ||
      info.dli_fname == nullptr) {
    return false;
  }
  const char* name = std::strrchr(info.dli_fname, '/');
  char buffer[24];
  write_text(" (");
  write_text(name != nullptr ? name + 1 : info.dli_fname);
  write_text("+");
  write_text(hex(address - reinterpret_cast<std::uintptr_t>(info.dli_fbase), buffer));
  write_text(")");
  return true;
}

// Note [Where a fault happened]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The unwinder walks from the handler through the kernel's signal frame to
// the faulting instruction, and stops there when that instruction lies in
// no loaded object: a call through a null or stale function pointer (a
// vtable that does not match, a symbol resolved to nothing), where the trace
// would end at libc's signal trampoline and name nobody. So a fault the
// processor raised (SIGSEGV, SIGBUS, SIGILL, SIGFPE) is described on its own
// line first: the address it touched, the program counter and its object,
// and, when the counter lies in no object, the return address the call left
// (on the stack on x86-64, in the link register on AArch64), which names
// the caller.
void write_fault(int signal, const siginfo_t* info, const void* context) {
  if (info == nullptr || info->si_code <= 0 || signal == SIGABRT) {
    return;  // sent by a process (kill, raise, abort): no faulting instruction
  }
  std::uintptr_t pc = 0;
  std::uintptr_t stack_pointer = 0;
  std::uintptr_t link = 0;  // the return address the faulting call left
  const auto* machine =
      context != nullptr ? &static_cast<const ucontext_t*>(context)->uc_mcontext : nullptr;
#if defined(__x86_64__)
  if (machine != nullptr) {
    pc = static_cast<std::uintptr_t>(machine->gregs[REG_RIP]);
    stack_pointer = static_cast<std::uintptr_t>(machine->gregs[REG_RSP]);
  }
#elif defined(__aarch64__)
  if (machine != nullptr) {
    pc = static_cast<std::uintptr_t>(machine->pc);
    link = static_cast<std::uintptr_t>(machine->regs[30]);
  }
#endif
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  char buffer[24];
  write_text(g_prefix);
  write_text(" fault at address ");
  write_text(hex(address, buffer));
  write_text(", pc ");
  write_text(hex(pc, buffer));
  if (!write_object_of(pc)) {
#if defined(__x86_64__)
    // The call left its return address on top of the stack. Read it only
    // where the stack is not what faulted (an overflow faults at the stack
    // pointer, and a fault in here would end the process untraced).
    constexpr std::uintptr_t kNearStack = 64 * 1024;
    const bool stack_faulted = address - stack_pointer + kNearStack < 2 * kNearStack;
    if (stack_pointer != 0 && !stack_faulted) {
      link = *reinterpret_cast<const std::uintptr_t*>(stack_pointer);
    }
#endif
    write_text(" in no loaded object (a call through a bad pointer?), return address ");
    write_text(hex(link, buffer));
    if (!write_object_of(link)) {
      write_text(" in no loaded object");
    }
  }
  write_text("\n");
}

// Set by the first thread in the handler; the others wait for it to end
// the process (OpenMP workers running the same bug fault together, and a
// second fault would otherwise cut the first trace short).
std::atomic<bool> g_claimed{false};

void on_fatal_signal(int signal, siginfo_t* info, void* context) {
  if (g_claimed.exchange(true)) {
    for (;;) {
      ::pause();
    }
  }
  // A trace that hangs (the unwinder waiting on a lock the crashed thread
  // holds) still ends the process: SIGALRM's default action.
  ::alarm(10);
  char number[16];
  int digits = 0;
  char reversed[16];
  for (int value = signal; value > 0 && digits < 15; value /= 10) {
    reversed[digits++] = static_cast<char>('0' + value % 10);
  }
  for (int i = 0; i < digits; ++i) {
    number[i] = reversed[digits - 1 - i];
  }
  number[digits] = '\0';
  write_text(g_prefix);
  write_text(" fatal signal ");
  write_text(number);
  write_text(" (");
  write_text(signal_name(signal));
  write_text("); native stack:\n");
  write_fault(signal, info, context);
  void* frames[kMaxFrames];
  const int count = ::backtrace(frames, kMaxFrames);
  ::backtrace_symbols_fd(frames, count, STDERR_FILENO);
  // Die of the same signal: the default action, raised again (delivered when
  // the handler returns; a fault re-executes and faults again).
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

// The explainers asked about an uncaught exception: slots filled in order
// under g_explainers_mutex, read without it (a slot is written once).
constexpr int kMaxExplainers = 8;
std::array<std::atomic<UncaughtExplainer>, kMaxExplainers> g_explainers{};
std::mutex g_explainers_mutex;

// The uncaught exception's type, demangled where the runtime can.
std::string uncaught_type_name() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (type == nullptr) {
    return "exception";
  }
  int status = 0;
  char* demangled = abi::__cxa_demangle(type->name(), nullptr, nullptr, &status);
  std::string name = (status == 0 && demangled != nullptr) ? demangled : type->name();
  std::free(demangled);
  return name;
}

void write_line(const std::string& text) {
  write_text(g_prefix);
  write_text(" ");
  write_text(text.c_str());
  write_text("\n");
}

// Names the exception nobody caught, with what the explainers make of it,
// then aborts: the SIGABRT handler adds the stack. This replaces the C++
// runtime's own handler, whose "terminate called after throwing..." names
// no rank and explains nothing.
[[noreturn]] void on_terminate() {
  static std::atomic<bool> entered{false};
  if (entered.exchange(true)) {
    std::abort();  // terminate again from in here (or another thread): no second report
  }
  if (std::exception_ptr error = std::current_exception()) {
    std::string what = "(not derived from std::exception)";
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    write_line("terminate: uncaught " + uncaught_type_name() + ": " + what);
    for (const auto& slot : g_explainers) {
      const UncaughtExplainer explainer = slot.load();
      if (explainer == nullptr) {
        break;
      }
      if (const std::string words = explainer(what); !words.empty()) {
        write_line(words);
      }
    }
  } else {
    write_line("terminate called without an active exception");
  }
  std::abort();
}

bool crash_trace_wanted() {
  const char* setting = std::getenv("DTRAIN_CRASH_TRACE");
  return setting == nullptr || std::string(setting) != "0";
}

}  // namespace

void install_crash_trace() {
  if (!crash_trace_wanted()) {
    return;
  }
  // backtrace() loads libgcc on its first call, which may allocate: do it
  // now rather than inside a handler.
  void* warm[1];
  ::backtrace(warm, 1);
  stack_t alternate{};
  alternate.ss_sp = g_alternate_stack;
  alternate.ss_size = sizeof(g_alternate_stack);
  ::sigaltstack(&alternate, nullptr);
  for (const int signal : kFatalSignals) {
    struct sigaction current {};
    if (::sigaction(signal, nullptr, &current) != 0 || current.sa_handler != SIG_DFL ||
        (current.sa_flags & SA_SIGINFO) != 0) {
      continue;  // someone else's handler, or already ours
    }
    struct sigaction action {};
    action.sa_sigaction = on_fatal_signal;
    sigemptyset(&action.sa_mask);
    // No SA_NODEFER: a fault inside the handler, with the signal blocked,
    // ends the process at once rather than recursing.
    action.sa_flags = SA_ONSTACK | SA_SIGINFO;
    ::sigaction(signal, &action, nullptr);
  }
  if (std::get_terminate() == __gnu_cxx::__verbose_terminate_handler) {
    std::set_terminate(on_terminate);  // a program's own handler stays
  }
}

void add_uncaught_explainer(UncaughtExplainer explainer) {
  std::lock_guard<std::mutex> lock(g_explainers_mutex);
  for (auto& slot : g_explainers) {
    const UncaughtExplainer present = slot.load();
    if (present == explainer) {
      return;
    }
    if (present == nullptr) {
      slot.store(explainer);
      return;
    }
  }
}

void set_crash_trace_rank(std::optional<int> rank, std::optional<int> local_rank) {
  auto text = [](std::optional<int> value) {
    return value ? std::to_string(*value) : std::string("-");
  };
  const std::string prefix = "[rank " + text(rank) + "/local " + text(local_rank) + "]";
  // A handler running now reads either the old or the new text, or a mix of
  // the two: it only labels the trace.
  std::snprintf(g_prefix, sizeof(g_prefix), "%s", prefix.c_str());
}

}  // namespace dtrain::util
