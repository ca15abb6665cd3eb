"""Two short gazetteers: the world's countries (and continents, large regions, US states and
Canadian provinces), and common given names.

The small spaCy model often mistypes a lone country ("Malawi" as a person, "Canada" as an
organisation) or a name it has not seen ("Iga Swiatek" as an organisation). These lists are
general knowledge, not lists of what some document contains: a country is a location, and a
capitalised pair starting with a common given name is a person. Given names that are also
common words or well-known places ("Will", "May", "Grace", "Victoria", "Florence",
"Jordan") are left out on purpose.
"""

from __future__ import annotations

from typing import Final


def _names(block: str) -> frozenset[str]:
    return frozenset(line.strip() for line in block.strip().splitlines() if line.strip())


#: Exact capitalised forms, one a line.
PLACES: Final[frozenset[str]] = _names(
    """
    Afghanistan
    Albania
    Algeria
    Andorra
    Angola
    Argentina
    Armenia
    Australia
    Austria
    Azerbaijan
    Bahamas
    Bahrain
    Bangladesh
    Barbados
    Belarus
    Belgium
    Belize
    Benin
    Bhutan
    Bolivia
    Bosnia
    Bosnia and Herzegovina
    Botswana
    Brazil
    Britain
    Great Britain
    Brunei
    Bulgaria
    Burkina Faso
    Burundi
    Cambodia
    Cameroon
    Canada
    Cape Verde
    Central African Republic
    Chile
    China
    Colombia
    Comoros
    Congo
    Costa Rica
    Croatia
    Cuba
    Cyprus
    Czech Republic
    Czechia
    Denmark
    Djibouti
    Dominica
    Dominican Republic
    East Timor
    Ecuador
    Egypt
    El Salvador
    England
    Equatorial Guinea
    Eritrea
    Estonia
    Eswatini
    Ethiopia
    Fiji
    Finland
    France
    Gabon
    Gambia
    Georgia
    Germany
    Ghana
    Greece
    Grenada
    Guatemala
    Guinea
    Guinea-Bissau
    Guyana
    Haiti
    Honduras
    Hong Kong
    Hungary
    Iceland
    India
    Indonesia
    Iran
    Iraq
    Ireland
    Northern Ireland
    Israel
    Italy
    Ivory Coast
    Jamaica
    Japan
    Kazakhstan
    Kenya
    Kiribati
    Kosovo
    Kuwait
    Kyrgyzstan
    Laos
    Latvia
    Lebanon
    Lesotho
    Liberia
    Libya
    Liechtenstein
    Lithuania
    Luxembourg
    Macau
    Madagascar
    Malawi
    Malaysia
    Maldives
    Mali
    Malta
    Mauritania
    Mauritius
    Mexico
    Micronesia
    Moldova
    Monaco
    Mongolia
    Montenegro
    Morocco
    Mozambique
    Myanmar
    Burma
    Namibia
    Nauru
    Nepal
    Netherlands
    New Zealand
    Nicaragua
    Niger
    Nigeria
    North Korea
    North Macedonia
    Macedonia
    Norway
    Oman
    Pakistan
    Palau
    Palestine
    Panama
    Papua New Guinea
    Paraguay
    Peru
    Philippines
    Poland
    Portugal
    Puerto Rico
    Qatar
    Romania
    Russia
    Rwanda
    Samoa
    San Marino
    Saudi Arabia
    Scotland
    Senegal
    Serbia
    Seychelles
    Sierra Leone
    Singapore
    Slovakia
    Slovenia
    Somalia
    South Africa
    South Korea
    Korea
    South Sudan
    Spain
    Sri Lanka
    Sudan
    Suriname
    Sweden
    Switzerland
    Syria
    Taiwan
    Tajikistan
    Tanzania
    Thailand
    Tibet
    Togo
    Tonga
    Trinidad and Tobago
    Tunisia
    Turkey
    Turkmenistan
    Tuvalu
    Uganda
    Ukraine
    United Arab Emirates
    United Kingdom
    United States
    United States of America
    Uruguay
    Uzbekistan
    Vanuatu
    Vatican
    Venezuela
    Vietnam
    Wales
    Yemen
    Zambia
    Zimbabwe
    Africa
    Antarctica
    Asia
    Europe
    North America
    South America
    Latin America
    Central America
    Oceania
    Middle East
    Scandinavia
    Balkans
    Caribbean
    Alabama
    Alaska
    Arizona
    Arkansas
    California
    Colorado
    Connecticut
    Delaware
    Florida
    Hawaii
    Idaho
    Illinois
    Indiana
    Iowa
    Kansas
    Kentucky
    Louisiana
    Maine
    Maryland
    Massachusetts
    Michigan
    Minnesota
    Mississippi
    Missouri
    Montana
    Nebraska
    Nevada
    New Hampshire
    New Jersey
    New Mexico
    North Carolina
    North Dakota
    Ohio
    Oklahoma
    Oregon
    Pennsylvania
    Rhode Island
    South Carolina
    South Dakota
    Tennessee
    Texas
    Utah
    Vermont
    Virginia
    West Virginia
    Washington
    Wisconsin
    Wyoming
    Alberta
    British Columbia
    Manitoba
    New Brunswick
    Newfoundland
    Nova Scotia
    Ontario
    Quebec
    Saskatchewan
    """
)

#: Common given names (one a line), from many languages.
GIVEN_NAMES: Final[frozenset[str]] = _names(
    """
    Aaron
    Abdul
    Abdullah
    Adam
    Adrian
    Ahmed
    Aileen
    Aisha
    Alan
    Albert
    Alejandro
    Alex
    Alexander
    Alexandra
    Alexei
    Ali
    Alice
    Alison
    Amanda
    Amir
    Amy
    Ana
    Andrea
    Andreas
    Andrew
    Andy
    Angela
    Anil
    Anita
    Ann
    Anna
    Anne
    Anthony
    Antoine
    Antonio
    Arjun
    Arthur
    Ashley
    Barbara
    Ben
    Benjamin
    Bernard
    Bob
    Boris
    Brenda
    Brian
    Bruce
    Bruno
    Callum
    Cameron
    Carl
    Carla
    Carlos
    Carmen
    Caroline
    Carsten
    Catherine
    Charles
    Chen
    Chris
    Christian
    Christina
    Christine
    Christopher
    Chuck
    Claire
    Claudia
    Colin
    Craig
    Daniel
    Daniela
    Danielle
    Dave
    David
    Deborah
    Dennis
    Diana
    Diego
    Dimitri
    Dmitry
    Donald
    Doug
    Douglas
    Edward
    Elena
    Eleanor
    Elizabeth
    Emily
    Emma
    Emmanuel
    Eric
    Erik
    Ernst
    Eva
    Fatima
    Felipe
    Fernando
    Fiona
    Francesca
    Francesco
    Francis
    Francisco
    Frank
    Franz
    Fred
    Frederick
    Gabriel
    Gary
    Geoff
    Geoffrey
    George
    Gerhard
    Giovanni
    Giuseppe
    Gopal
    Gordon
    Graham
    Greg
    Gregory
    Guido
    Gustavo
    Hamid
    Hannah
    Hans
    Harry
    Hassan
    Heinz
    Helena
    Helen
    Henry
    Hiroshi
    Howard
    Hugo
    Hussein
    Iain
    Ian
    Igor
    Ines
    Ingrid
    Ivan
    Jack
    Jacob
    Jacques
    James
    Jamie
    Jane
    Janet
    Jason
    Javier
    Jean
    Jeff
    Jeffrey
    Jennifer
    Jens
    Jeremy
    Jessica
    Jim
    Joan
    Joanna
    Joe
    Johan
    Johannes
    John
    Jon
    Jonathan
    Jorge
    Jose
    Joseph
    Juan
    Julia
    Julian
    Julie
    Jürgen
    Karen
    Karl
    Kate
    Katherine
    Keith
    Kenji
    Kenneth
    Kevin
    Kim
    Klaus
    Kofi
    Lars
    Laura
    Lauren
    Lena
    Leo
    Leon
    Li
    Linda
    Lisa
    Liu
    Louis
    Luca
    Lucas
    Luis
    Luke
    Maria
    Marie
    Marco
    Marcus
    Margaret
    Mario
    Mark
    Marta
    Martin
    Mary
    Matthew
    Matteo
    Maurice
    Max
    Michael
    Michel
    Michelle
    Miguel
    Mikhail
    Mitch
    Mohamed
    Mohammed
    Moira
    Muhammad
    Nadia
    Natalia
    Neil
    Nicholas
    Nick
    Nicola
    Nicolas
    Nikolai
    Nina
    Noah
    Olaf
    Oliver
    Olga
    Omar
    Oscar
    Owen
    Pablo
    Patricia
    Patrick
    Paul
    Paula
    Pedro
    Peter
    Philip
    Philippe
    Pierre
    Priya
    Rachel
    Rafael
    Rahul
    Rajesh
    Ravi
    Rebecca
    Rhys
    Ricardo
    Richard
    Robert
    Roberto
    Roger
    Ronald
    Rory
    Ruth
    Ryan
    Sam
    Samuel
    Sandra
    Sara
    Sarah
    Satoshi
    Scott
    Sean
    Sebastian
    Sergei
    Sergio
    Simon
    Sofia
    Sophie
    Stefan
    Stephen
    Steve
    Steven
    Susan
    Takeshi
    Tamas
    Thomas
    Tim
    Timothy
    Tom
    Tomas
    Tommy
    Tony
    Ulrich
    Vassilis
    Victor
    Vijay
    Vincent
    Vladimir
    Walter
    Wang
    Wei
    Werner
    William
    Wolfgang
    Xavier
    Yuki
    Yuri
    Yusuf
    Zhang
    """
)
