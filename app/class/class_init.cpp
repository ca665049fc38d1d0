// `opscope class init DIR --name NAME [--roster CSV]`: the class's folder, its database and keys.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

#include "app/class/secrets.h"
#include "app/class/server.h"
#include "app/class/store.h"
#include "app/class/summary.h"
#include "core/error.h"

namespace opscope::classroom {

namespace {

namespace fs = std::filesystem;

// A CSV line's first field: "Hopper, Grace" quoted with its comma, "" a quote inside quotes.
std::string first_csv_field(const std::string& line) {
  if (line.empty() || line[0] != '"') return line.substr(0, line.find(','));
  std::string field;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] != '"') field += line[i];
    else if (i + 1 < line.size() && line[i + 1] == '"') field += line[++i];
    else break;
  }
  return field;
}

// Written readable by its owner only: every link in it lets someone act as a student.
void write_private(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  if (!f || !(f << text)) throw Error("cannot write " + path);
  f.close();
  std::error_code ec;
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace, ec);
}

// "name,..." per line; a first line "name" or "student" is a header.
std::vector<std::string> read_roster(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw Error("cannot read the roster " + path, "a CSV file with one student's name per line");
  std::vector<std::string> names;
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string name = first_csv_field(line);
    if (name.empty() || (n == 1 && (name == "name" || name == "student"))) continue;
    if (name.size() > kNameCap) throw Error(path + ":" + std::to_string(n) + ": a name longer than 80 bytes");
    names.push_back(name);
  }
  return names;
}

}  // namespace

int init_class(const InitArgs& a) {
  if (a.name.empty()) throw Error("a class needs a name", "opscope class init DIR --name \"Deep learning, week 3\"");
  std::error_code ec;
  fs::create_directories(a.dir, ec);
  if (ec) throw Error("cannot make the folder " + a.dir + ": " + ec.message());
  fs::permissions(a.dir, fs::perms::owner_all, fs::perm_options::replace, ec);  // it holds the keys
  if (fs::exists(class_db_path(a.dir)))
    throw Error(a.dir + " holds a class already",
                "serve it with `opscope class serve " + a.dir + "`, or choose another folder");
  const std::vector<std::string> roster = a.roster.empty() ? std::vector<std::string>{} : read_roster(a.roster);
  Store store(class_db_path(a.dir));
  const ClassInfo info{a.name, random_hex(24), new_class_code()};
  store.create_class(info);
  // Each roster student's own join link: the token in it joins them without typing anything.
  std::string links = "name,join link (after the class's address, e.g. http://192.168.1.20:8000)\n";
  for (const std::string& n : roster) {
    const std::string link = random_hex(16);
    store.add_roster_name(n, link);
    links += csv_field(n) + ",/?join=" + link + "\n";
  }
  if (!roster.empty()) write_private(a.dir + "/join_links.csv", links);
  std::cout << "class: " << a.name << " in " << a.dir << "\n";
  std::cout << "teacher key: " << info.teacher_key << "\n";
  std::cout << "class code: " << info.class_code << "\n";
  if (!roster.empty()) {
    std::cout << "roster: " << roster.size()
              << " students, who join with the class code and their name as written in the roster\n";
    std::cout << "join links: " << a.dir
              << "/join_links.csv (one per student: http://ADDRESS:PORT/?join=TOKEN joins them without typing)\n";
  }
  std::cout << "next: opscope class serve " << a.dir
            << " --port 8000, then open http://127.0.0.1:8000/teacher?key=KEY\n";
  return 0;
}

}  // namespace opscope::classroom
