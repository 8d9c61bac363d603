// Seeds of the CSV target (csv_target.cpp, limits: 64 rows, 16 columns, 64-byte fields, 256
// cells): label files as the dataset layouts read them, every quoting and line-break form, the
// malformed files the reader refuses, and hostile ones (floods of empty fields, rows, quotes).
#include <string>

#include "seeds.h"

namespace ltfit::fuzz {

std::vector<Seed> csv_seeds() {
  std::string many_rows = "path,label\n";
  for (int i = 0; i < 100; ++i) many_rows += "img" + std::to_string(i) + ".jpg,cat\n";
  return {
      {"labels", "path,label\ntrain/cat/1.jpg,cat\ntrain/dog/2.jpg,dog\n"},
      {"multi-label", "image,labels,is_valid\na.jpg,cat dog,False\nb.jpg,,True\n"},
      {"quoted", "name,note\n\"a,b\",\"say \"\"hi\"\"\"\n\"two\nlines\",\"\"\n"},
      {"crlf-bom",
       "\xEF\xBB\xBF"
       "a,b\r\n\"x\r\ny\",1\r\n2,3"},
      {"lone-cr", "a,b\r1,2\r3,4\r"},
      {"blank-lines", "\n \npath,label\n\n\ta\t,b\n  \t\r\n\r\nc,d\n\n"},
      {"unicode", "名前,ラベル\n猫.jpg,chat é\n\"Ωmega, ☃\",😀\n"},
      {"empty-fields", "a,b,c\n,,\n\"\",x,\n"},
      {"bare-quote", "a,b\n5\" disk,ab\"c\n"},
      {"unterminated", "a,b\n1,\"open\n2,3\n", Expect::kRefused},
      {"after-quote", "a,b\n\"x\"y,1\n", Expect::kRefused},
      {"ragged", "a,b\n1,2\n3\n", Expect::kRefused},
      {"duplicate-header", "a,b,a\n1,2,3\n", Expect::kRefused},
      {"empty", "", Expect::kRefused},
      {"hostile-empty-fields", std::string(4000, ','), Expect::kRefused},
      {"hostile-rows", many_rows, Expect::kRefused},
      {"hostile-quotes", "a\n\"" + std::string(3000, '"') + "\n", Expect::kRefused},
      {"hostile-long-field", "a,b\n" + std::string(200, 'x') + ",1\n", Expect::kRefused},
  };
}

std::string csv_dictionary() {
  return "\"\\\"\"\n"
         "\"\\\"\\\"\"\n"
         "\",\"\n"
         "\"\\x0d\\x0a\"\n"
         "\"\\x0d\"\n"
         "\"\\x0a\"\n"
         "\"\\xef\\xbb\\xbf\"\n"
         "\",\\\"\"\n"
         "\"\\\",\"\n";
}

}  // namespace ltfit::fuzz
